"""``preprocess=device`` (connote.models.pixels) against each backend's own processor, on real photos.

The photos are scikit-image's astronaut, coffee, chelsea and rocket, written as JPEG and PNG files and read
back. Stated tolerances (docs/performance.md has the measured figures):

* BLIP, BLIP-2, FLAVA, CLIP (transformers' processors at their real sizes): max |Δ pixel| <= 1e-5 and
  max |Δ p(match)| <= 1e-5 — the same resize, crop and fused normalisation in float32;
* the GPU path's math (``_stacked`` on uint8 tensors, photos of a size resized together, the batch normalised
  at once), run on the CPU: with torch's uint8 resize max |Δ pixel| <= 1e-5; with the float32 passes a GPU runs
  (no uint8 kernel there) max |Δ pixel| <= 0.035 (two of 255 levels after normalisation, on under 1% of values);
* ALBEF (the release's PIL bicubic resize, kept as its default): max |Δ pixel| <= 0.05 (about two of 255
  levels after normalisation) and max |Δ p(match)| <= 0.02 on the tiny model;
* a chat VLM (hf-vlm, LLaVA): the processor's token ids exactly, max |Δ pixel| <= 1e-5 and
  max |Δ p(yes)| <= 1e-5.
"""

from __future__ import annotations

import io

import pytest
import torch
from PIL import Image

from connote.core.errors import InputError
from connote.models import load_model
from connote.models.pixels import PixelSpec, _stacked, decode_each, gpu_decodable, pixel_batch, to_device, to_uint8
from tests.support import tiny_models

skimage_data = pytest.importorskip("skimage.data")
pytest.importorskip("torchvision")

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")
CAPTIONS = ["an astronaut with a flag", "a cup of coffee", "a cat", "a rocket launch", "a red car outside"]
PAIRS = [(i, c) for i in range(4) for c in range(5)]
PIXEL_TOL, P_TOL = 1e-5, 1e-5
GPU_PIXEL_TOL = 0.035
ALBEF_PIXEL_TOL, ALBEF_P_TOL = 0.05, 0.02


@pytest.fixture(scope="module")
def photo_files(tmp_path_factory) -> dict[str, list]:
    """Each photo as a JPEG and a PNG file: ``{format: [path, ...]}``."""
    root = tmp_path_factory.mktemp("photos")
    out: dict[str, list] = {"JPEG": [], "PNG": []}
    for name in PHOTOS:
        image = Image.fromarray(getattr(skimage_data, name)()).convert("RGB")
        for fmt, ext in (("JPEG", "jpg"), ("PNG", "png")):
            path = root / f"{name}.{ext}"
            image.save(path, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
            out[fmt].append(path)
    return out


def opened(paths) -> list[Image.Image]:
    return [Image.open(p).convert("RGB") for p in paths]


def processors():
    from transformers import BlipImageProcessor, CLIPImageProcessor, FlavaImageProcessor, LlavaImageProcessor

    return {"blip": BlipImageProcessor(), "blip2": BlipImageProcessor(size={"height": 224, "width": 224}),
            "clip": CLIPImageProcessor(), "clip-336": CLIPImageProcessor(size={"shortest_edge": 336},
                                                                        crop_size={"height": 336, "width": 336}),
            "flava": FlavaImageProcessor(),
            # LLaVA-1.5's (llava-hf/llava-1.5-7b-hf ships a CLIPImageProcessor at 336 px; LlavaImageProcessor is the
            # class transformers gives the llava models with do_pad off)
            "llava": LlavaImageProcessor(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336})}


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
@pytest.mark.parametrize("name", list(processors()))
def test_device_pixels_equal_the_processors_at_real_size(photo_files, name, fmt) -> None:
    processor = processors()[name]
    images = opened(photo_files[fmt])
    ref = processor(images=images, return_tensors="pt")["pixel_values"]
    spec = PixelSpec.from_processor(processor)
    from_pil = pixel_batch(images, spec, "cpu")
    from_bytes = pixel_batch([p.read_bytes() for p in photo_files[fmt]], spec, "cpu", workers=2)
    assert from_pil.shape == ref.shape
    assert (from_pil - ref).abs().max().item() <= PIXEL_TOL
    assert (from_bytes - ref).abs().max().item() <= PIXEL_TOL  # decoded by torchvision on CPU threads


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
@pytest.mark.parametrize("name", list(processors()))
def test_the_gpu_paths_math_equals_the_processors(photo_files, name, fmt) -> None:
    """``_stacked`` is what pixel_batch runs on a GPU after to_device: photos grouped by size (here four sizes, two
    of them twice, in mixed order), each group resized as one stack, the batch normalised at once. On the CPU it
    resizes with torch's uint8 kernel (the processors' own); with ``float_passes`` it runs the GPU's resize."""
    processor = processors()[name]
    paths = photo_files[fmt] + photo_files[fmt][:2][::-1]
    images = opened(paths)
    ref = processor(images=images, return_tensors="pt")["pixel_values"]
    spec = PixelSpec.from_processor(processor)
    for source in (images, [p.read_bytes() for p in paths]):
        tensors = to_device(source, "cpu")
        got = _stacked(tensors, spec, None)
        assert got.shape == ref.shape and got.dtype == torch.float32
        assert (got - ref).abs().max().item() <= PIXEL_TOL
        gpu = _stacked(tensors, spec, None, float_passes=True)
        diff = (gpu - ref).abs()
        assert diff.max().item() <= GPU_PIXEL_TOL and (diff > PIXEL_TOL).float().mean().item() < 0.01
        assert _stacked(tensors, spec, torch.bfloat16, float_passes=True).dtype == torch.bfloat16


def _refusing(bad: set[bytes], calls: list[int]):
    """A batched JPEG decoder (torchvision's CPU one) that, like nvJPEG, fails a whole batch holding a photo of
    ``bad``; ``calls`` gets each call's batch size."""
    from torchvision.io import ImageReadMode, decode_jpeg

    def decode(tensors, device):
        calls.append(len(tensors))
        if any(bytes(t.numpy()) in bad for t in tensors):
            raise RuntimeError("Error while decoding JPEG images: Failed to decode batch: 2")
        return [decode_jpeg(t, mode=ImageReadMode.RGB).to(device) for t in tensors]

    return decode


def _encoded(image: Image.Image, fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **options)
    return buf.getvalue()


def test_a_jpeg_the_gpu_decoder_refuses_is_decoded_alone_not_failing_the_batch(photo_files) -> None:
    """to_device's GPU decode, driven on the CPU with a decoder that refuses one photo: the batch is decoded again
    photo by photo, the refused photo on the CPU; a CMYK JPEG and a PNG never reach the GPU decoder."""
    photos = opened(photo_files["PNG"])
    jpeg = [_encoded(im, "JPEG", quality=90) for im in photos]
    refused = _encoded(photos[1], "JPEG", quality=90, progressive=True)
    cmyk = _encoded(photos[2].convert("CMYK"), "JPEG", quality=90)
    png = photo_files["PNG"][3].read_bytes()
    assert all(map(gpu_decodable, jpeg + [refused])) and not gpu_decodable(cmyk) and not gpu_decodable(png)
    assert not gpu_decodable(jpeg[0][:40]) and not gpu_decodable(b"\xff\xd8\xff")  # no frame header read
    batch = [jpeg[0], refused, cmyk, jpeg[3], png, bytearray(jpeg[2])]
    want = to_device(batch, "cpu")  # every photo by the CPU decoder
    calls: list[int] = []
    with pytest.warns(RuntimeWarning, match="refused a photo .*decoded on the CPU"):
        got = to_device(batch, "cpu", decode_jpegs=_refusing({refused}, calls))
    assert calls == [4, 1, 1, 1, 1]  # the four JPEGs it reads as one batch, then one by one
    assert len(got) == len(batch) and all(torch.equal(a, b) for a, b in zip(got, want))
    # nothing refused: one batched call, and its tensors are the output as they are
    calls.clear()
    decoded: list = []

    def keep(tensors, device):
        decoded.extend(_refusing(set(), calls)(tensors, device))
        return decoded[-len(tensors):]

    got = to_device(jpeg, "cpu", decode_jpegs=keep)
    assert calls == [4] and all(a is b for a, b in zip(got, decoded))
    # a single refused photo is decoded on the CPU at once; running out of memory is raised, not worked around
    calls.clear()
    with pytest.warns(RuntimeWarning):
        assert decode_each([refused], "cpu", _refusing({refused}, calls)) == [None] and calls == [1]

    def out_of_memory(tensors, device):
        raise torch.OutOfMemoryError("CUDA out of memory")

    with pytest.raises(torch.OutOfMemoryError):
        to_device(jpeg, "cpu", decode_jpegs=out_of_memory)


def test_uint8_tensors_and_pil_images_give_the_same_pixels(photo_files) -> None:
    images = opened(photo_files["PNG"])
    tensors = to_device(images, "cpu")
    assert all(t.dtype == torch.uint8 and t.shape[0] == 3 for t in tensors)
    spec = PixelSpec(size=(64, 64), mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    assert torch.equal(pixel_batch(tensors, spec, "cpu"), pixel_batch(images, spec, "cpu"))
    assert pixel_batch(images, spec, "cpu", torch.bfloat16).dtype == torch.bfloat16


def test_cpu_rows_follow_the_callers_inference_mode_and_sizes_left_to_the_photo(photo_files) -> None:
    from transformers import CLIPImageProcessor

    images = opened(photo_files["PNG"])
    spec = PixelSpec(size=(64, 64), mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    plain = pixel_batch(images, spec, "cpu", workers=2)
    with torch.inference_mode():  # the engine prepares pixels so; the pool's threads must write the rows so too
        inner = pixel_batch(images, spec, "cpu", workers=2)
    assert inner.is_inference() and not plain.is_inference() and torch.equal(inner, plain)
    # short side resized, no crop: the output's size comes from the photo (here one photo twice)
    processor = CLIPImageProcessor(do_center_crop=False)
    twice = [images[0], images[0]]
    ref = processor(images=twice, return_tensors="pt")["pixel_values"]
    got = pixel_batch(twice, PixelSpec.from_processor(processor), "cpu", workers=2)
    assert got.shape == ref.shape and (got - ref).abs().max().item() <= PIXEL_TOL


def _rows_in_a_forked_child(photos: list, queue) -> None:
    spec = PixelSpec(size=(16, 16), mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))  # rows under OpenMP's grain
    queue.put(pixel_batch(photos, spec, "cpu", workers=2).sum().item())


def test_the_cpu_pool_works_in_a_forked_child() -> None:
    """A process forked after the pool started (a DataLoader worker, say) has none of its threads: it must start
    its own, not wait for threads that do not exist."""
    import multiprocessing
    import sys

    if sys.platform != "linux":
        pytest.skip("fork is the Linux default start method")
    photos = [torch.randint(0, 256, (3, 20, 24), dtype=torch.uint8) for _ in range(3)]
    spec = PixelSpec(size=(16, 16), mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    expected = pixel_batch(photos, spec, "cpu", workers=2).sum().item()  # the parent's pool is running
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_rows_in_a_forked_child, args=(photos, queue))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0, "the forked child's pixel_batch did not finish"
    assert queue.get(timeout=5) == pytest.approx(expected)


@pytest.mark.parametrize("backend", ["hf-blip-itm", "hf-blip2-itm", "hf-flava-itm", "hf-clip"])
def test_p_match_of_the_device_path_equals_the_processor_path(tiny_dirs, photo_files, backend) -> None:
    folder = tiny_dirs[backend]
    device = load_model(f"{backend}:{folder}")
    hf = load_model(f"{backend}:{folder}?preprocess=hf")
    assert device.preprocess == "device" and hf.preprocess == "hf"
    assert "preprocess" not in device.describe() and hf.describe()["preprocess"] == "hf"  # in the fingerprint
    for fmt in ("JPEG", "PNG"):
        images = opened(photo_files[fmt])
        assert (device.pixel_values(images) - hf.pixel_values(images)).abs().max().item() <= PIXEL_TOL
        a = device.match_probability(images, CAPTIONS, PAIRS)
        b = hf.match_probability(images, CAPTIONS, PAIRS)
        assert max(abs(x - y) for x, y in zip(a, b)) <= P_TOL
        assert len({round(x, 3) for x in b}) > 2, "the tiny model must tell pairs apart for this test to mean much"


def test_albef_device_path_is_near_the_releases_pil_resize(tmp_path, photo_files) -> None:
    ckpt, tok = tiny_models.tiny_albef(tmp_path / "albef", layout="retrieval", grid=4)
    spec = f"albef-itm:{ckpt}?tokenizer={tok}&image_size=32"
    hf, device = load_model(spec), load_model(spec + "&preprocess=device")
    assert hf.preprocess == "hf" and device.preprocess == "device"  # ALBEF keeps the release's resize by default
    assert hf.describe()["preprocess"] != device.describe()["preprocess"]
    for fmt in ("JPEG", "PNG"):
        images = opened(photo_files[fmt])
        assert (device.pixel_values(images) - hf.pixel_values(images)).abs().max().item() <= ALBEF_PIXEL_TOL
        # at the release's 384 px
        real = PixelSpec(size=(384, 384), mean=device.pixel_spec().mean, std=device.pixel_spec().std)
        hf.shape = device.shape = type(hf.shape)(**{**hf.shape.__dict__, "image_size": 384})
        assert (pixel_batch(images, real, "cpu") - hf.processor_pixels(images)).abs().max().item() <= ALBEF_PIXEL_TOL
        hf.shape = device.shape = type(hf.shape)(**{**hf.shape.__dict__, "image_size": 32})
        a = device.match_probability(images, CAPTIONS, PAIRS)
        b = hf.match_probability(images, CAPTIONS, PAIRS)
        assert max(abs(x - y) for x, y in zip(a, b)) <= ALBEF_P_TOL


def test_chat_vlm_device_path_equals_the_processor_path(tiny_dirs, photo_files) -> None:
    """A chat VLM's Yes/No scoring (hf-vlm, LLaVA): pixels made on the device with its processor's config and the
    token ids with the image token expanded as the processor expands it, against the processor's own inputs."""
    folder = tiny_dirs["hf-vlm-yesno"]
    device = load_model(f"hf-vlm:{folder}")
    hf = load_model(f"hf-vlm:{folder}?preprocess=hf")
    assert device.preprocess == "device" and hf.preprocess == "hf"  # auto: the processor passed the load check
    assert "preprocess" not in device.describe() and hf.describe()["preprocess"] == "hf"  # in the fingerprint
    for fmt in ("JPEG", "PNG"):
        images = opened(photo_files[fmt])
        rows = [images[0], images[1], images[0], images[3]]  # an image twice: its pixels made once
        a, b = device.inputs(rows, CAPTIONS[:4]), hf.inputs(rows, CAPTIONS[:4])
        assert set(a) == set(b) == {"input_ids", "attention_mask", "pixel_values"}
        assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["attention_mask"], b["attention_mask"])
        assert (a["pixel_values"] - b["pixel_values"]).abs().max().item() <= PIXEL_TOL
        p_device = device.match_probability(images, CAPTIONS, PAIRS)
        p_hf = hf.match_probability(images, CAPTIONS, PAIRS)
        assert max(abs(x - y) for x, y in zip(p_device, p_hf)) <= P_TOL
        assert len({round(x, 3) for x in p_hf}) > 2, "the tiny model must tell pairs apart for this test to mean much"


def test_chat_vlm_processor_the_device_path_does_not_reproduce_stays_on_hf(tiny_dirs, tmp_path) -> None:
    """LLaVA-NeXT's tiles and LLaVA's pad-to-square are found at load: auto keeps the processor, device is refused."""
    from transformers import AutoProcessor, LlavaImageProcessor, LlavaNextImageProcessor

    from connote.models.pixels import checked_spec

    spec, why = checked_spec(LlavaNextImageProcessor())
    assert spec is None and "image_sizes" in why
    padded = LlavaImageProcessor(do_pad=True, size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    spec, why = checked_spec(padded)
    assert spec is None and "differ" in why
    import shutil

    folder = tmp_path / "llava-pad"
    shutil.copytree(tiny_dirs["hf-vlm-yesno"], folder)
    processor = AutoProcessor.from_pretrained(folder)
    processor.image_processor = padded
    processor.save_pretrained(folder)
    auto = load_model(f"hf-vlm:{folder}")
    assert auto.preprocess == "hf" and "preprocess" not in auto.describe()
    with pytest.raises(InputError, match="preprocess=device: the processor of .* differ"):
        load_model(f"hf-vlm:{folder}?preprocess=device")
    # a processor the probe fails on (here: no chat template) still loads, on its own processor
    bare = tmp_path / "llava-bare"
    shutil.copytree(tiny_dirs["hf-vlm-yesno"], bare)
    (bare / "chat_template.jinja").unlink()
    assert load_model(f"hf-vlm:{bare}").preprocess == "hf"


@pytest.mark.parametrize("backend", ["hf-clip", "hf-vlm"])
def test_unknown_preprocess_is_refused(tiny_dirs, backend) -> None:
    folder = tiny_dirs["hf-vlm-yesno" if backend == "hf-vlm" else backend]
    with pytest.raises(Exception, match="preprocess"):
        load_model(f"{backend}:{folder}?preprocess=gpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_jpeg_bytes_are_decoded_on_the_gpu_near_the_cpu_decode(photo_files) -> None:
    from transformers import BlipImageProcessor

    processor = BlipImageProcessor()
    spec = PixelSpec.from_processor(processor)
    data = [p.read_bytes() for p in photo_files["JPEG"]]
    gpu = pixel_batch(data, spec, "cuda").cpu()
    cpu = pixel_batch(data, spec, "cpu")
    assert (gpu - cpu).abs().max().item() <= 0.1  # nvJPEG's IDCT rounds differently from libjpeg's
    # decoded on the CPU, resized and normalised on the GPU: the processor's pixels within the float passes'
    # tolerance and one level more (CUDA's float arithmetic may round a value at .5 the other way)
    images = opened(photo_files["PNG"])
    ref = processor(images=images, return_tensors="pt")["pixel_values"]
    diff = (pixel_batch(images, spec, "cuda").cpu() - ref).abs()
    assert diff.max().item() <= GPU_PIXEL_TOL + 0.015 and (diff > PIXEL_TOL).float().mean().item() < 0.01
    # a CMYK JPEG goes to the CPU decoder; the others stay on the GPU
    cmyk = _encoded(images[0].convert("CMYK"), "JPEG", quality=90)
    mixed = to_device([data[0], cmyk, data[1]], "cuda")
    assert [t.device.type for t in mixed] == ["cuda"] * 3 and mixed[1].shape == to_uint8(cmyk).shape
