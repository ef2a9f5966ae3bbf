"""load_image: bounded downloads, item errors for bad paths, 16-bit greyscale, huge images downscaled on load."""

from __future__ import annotations

import http.server
import io
import os
import struct
import threading
import time
import tracemalloc
import warnings
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from connote.core.errors import ItemError
from connote.media.images import DEFAULT_MAX_SIDE, load_image

Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


@pytest.fixture()
def serve() -> Iterator[Callable[[Handler], str]]:
    """``serve(handler)`` starts a loopback HTTP server answering GET with ``handler``; returns its URL."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(handler: Handler) -> str:
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                try:
                    handler(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/img.png"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def _png_bytes(size: tuple[int, int] = (20, 10), colour: tuple[int, int, int] = (10, 200, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


def test_url_loads_only_with_network_allowed(serve: Callable[[Handler], str]) -> None:
    data = _png_bytes()

    def ok(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    url = serve(ok)
    with pytest.raises(ItemError, match="network access is off"):
        load_image(url)
    img = load_image(url, allow_network=True)
    assert img.size == (20, 10) and img.getpixel((0, 0)) == (10, 200, 30)


def _assert_cut_off_at_the_deadline(serve: Callable[[Handler], str],
                                    opening: Callable[[http.server.BaseHTTPRequestHandler], None],
                                    chunk: Callable[[int], bytes]) -> None:
    """A server that sends ``opening`` and then one ``chunk`` every 0.1 s for 20 s: each read returns within a
    socket timeout, so only the download's 1 s deadline stops it."""
    stop = threading.Event()

    def trickle(h: http.server.BaseHTTPRequestHandler) -> None:
        opening(h)
        h.wfile.flush()
        for k in range(200):
            if stop.is_set():
                return
            h.wfile.write(chunk(k))
            h.wfile.flush()
            time.sleep(0.1)

    url = serve(trickle)
    t0 = time.monotonic()
    with pytest.raises(ItemError, match=r"longer than the 1 s deadline"):
        load_image(url, allow_network=True, timeout=1.0)
    elapsed = time.monotonic() - t0
    stop.set()
    assert elapsed < 6.0  # the server would take 20 s; the deadline is 1 s (slack for a loaded machine)


def test_trickling_server_is_cut_off_at_the_deadline(serve: Callable[[Handler], str]) -> None:
    def headers(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "100000")
        h.end_headers()

    _assert_cut_off_at_the_deadline(serve, headers, lambda k: b"\x89")  # the body, one byte at a time


def test_download_byte_cap(serve: Callable[[Handler], str]) -> None:
    big = os.urandom(5000)

    def declared(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(big)))
        h.end_headers()
        h.wfile.write(big)

    def undeclared(h: http.server.BaseHTTPRequestHandler) -> None:  # no Content-Length: ends at close
        h.send_response(200)
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(big)

    with pytest.raises(ItemError, match="5,000 bytes, over the 1,000-byte limit"):
        load_image(serve(declared), allow_network=True, max_bytes=1000)
    with pytest.raises(ItemError, match="over the 1,000-byte limit"):
        load_image(serve(undeclared), allow_network=True, max_bytes=1000)


def test_http_error_is_an_item_error(serve: Callable[[Handler], str]) -> None:
    def missing(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_error(404)

    with pytest.raises(ItemError, match="HTTP 404"):
        load_image(serve(missing), allow_network=True)


def test_symlink_loop_directory_and_garbage_are_item_errors(tmp_path: Path) -> None:
    (tmp_path / "a.png").symlink_to(tmp_path / "b.png")
    (tmp_path / "b.png").symlink_to(tmp_path / "a.png")
    with pytest.raises(ItemError, match=r"a\.png: cannot read image \(Too many levels of symbolic links\)"):
        load_image(tmp_path / "a.png")
    (tmp_path / "dir.png").mkdir()
    with pytest.raises(ItemError, match="is a directory, not an image file"):
        load_image(tmp_path / "dir.png")
    (tmp_path / "junk.png").write_bytes(b"not an image")
    with pytest.raises(ItemError, match="cannot read image"):
        load_image(tmp_path / "junk.png")
    with pytest.raises(ItemError, match="image file not found"):
        load_image(tmp_path / "nope.png")


def test_16_bit_greyscale_png_is_scaled_not_clipped(tmp_path: Path) -> None:
    values = np.array([[0, 257, 32896, 65535]], dtype=np.uint16)  # 0, 1, 128, 255 in 8 bit
    path = tmp_path / "g16.png"
    Image.fromarray(values).save(path)
    assert Image.open(path).mode.startswith("I")
    img = load_image(path)
    assert np.asarray(img)[0, :, 0].tolist() == [0, 1, 128, 255]
    assert np.asarray(img)[0, 2].tolist() == [128, 128, 128]
    # mode I (32-bit) holding 16-bit values, and float images in [0, 1]
    as_i = Image.fromarray(values.astype(np.int32))
    as_i.save(tmp_path / "i.tiff")
    assert np.asarray(load_image(tmp_path / "i.tiff"))[0, :, 0].tolist() == [0, 1, 128, 255]
    Image.fromarray(np.array([[0.0, 0.5, 1.0]], dtype=np.float32)).save(tmp_path / "f.tiff")
    assert np.asarray(load_image(tmp_path / "f.tiff"))[0, :, 0].tolist() == [0, 128, 255]


def _write_big_png(path: Path, width: int, height: int) -> None:
    """A greyscale PNG written row by row (a horizontal gradient), never held in memory whole."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(int(255 * x / (width - 1)) for x in range(width))
    comp = zlib.compressobj(6)
    with path.open("wb") as fh:
        fh.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)))
        block = row * 500
        for _ in range(height // 500):
            fh.write(chunk(b"IDAT", comp.compress(block)))
        fh.write(chunk(b"IDAT", comp.flush()) + chunk(b"IEND", b""))


def test_108_megapixel_png_is_downscaled_on_load(tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    _write_big_png(path, 12_000, 9_000)
    assert path.stat().st_size < 2_000_000
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Pillow's DecompressionBombWarning must not escape
        tracemalloc.start()
        img = load_image(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert img.size == (DEFAULT_MAX_SIDE, 1536)
    assert img.getpixel((0, 0))[0] < 3 and img.getpixel((DEFAULT_MAX_SIDE - 1, 0))[0] > 252
    assert peak < 200 * 2**20  # sanity bound on Python-side allocations
    assert load_image(path, max_side=1000).size == (1000, 750)
    with pytest.raises(ItemError, match="over the 50,000,000-pixel limit"):
        load_image(path, max_pixels=50_000_000)


def test_huge_jpeg_is_decoded_at_reduced_scale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "huge.jpg"
    Image.new("L", (12_000, 9_000), 90).save(path, quality=50)
    decoded: list[tuple[int, int]] = []
    real_load = Image.Image.load

    def spy(self: Image.Image):  # noqa: ANN202
        out = real_load(self)
        if getattr(self, "format", None) == "JPEG":
            decoded.append(self.size)
        return out

    monkeypatch.setattr(Image.Image, "load", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        img = load_image(path)
    assert img.size == (2048, 1536) and img.getpixel((10, 10)) == (90, 90, 90)
    assert decoded and decoded[0] == (3000, 2250)  # JPEG draft: 1/4 scale, never the full 12000 x 9000


def test_small_images_are_untouched(tmp_path: Path) -> None:
    rng = np.random.RandomState(0)
    arr = (rng.rand(40, 48, 3) * 255).astype("uint8")
    Image.fromarray(arr).save(tmp_path / "s.png")
    assert np.array_equal(np.asarray(load_image(tmp_path / "s.png")), arr)
    Image.fromarray(arr).convert("P").save(tmp_path / "p.png")
    assert load_image(tmp_path / "p.png").mode == "RGB"


def test_server_trickling_its_headers_is_cut_off_at_the_deadline(serve: Callable[[Handler], str]) -> None:
    def status(h: http.server.BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"HTTP/1.1 200 OK\r\n")

    # each header line arrives within a socket timeout, but the headers never end
    _assert_cut_off_at_the_deadline(serve, status, lambda k: f"X-Slow-{k}: 1\r\n".encode())


def _photo(name: str = "astronaut") -> Image.Image:
    from skimage import data as skimage_data

    return Image.fromarray(getattr(skimage_data, name)())


def test_keep_jpeg_returns_the_bytes_only_where_a_decoder_makes_load_images_pixels(tmp_path: Path) -> None:
    """``keep_jpeg``: an upright RGB or greyscale JPEG, whole and within max_side, stays encoded, and torchvision's
    decoder makes exactly the pixels load_image makes of it; every other image is loaded as without the option."""
    torch = pytest.importorskip("torch")
    from torchvision.io import ImageReadMode, decode_jpeg

    photo = _photo().resize((320, 240))
    kept = {"rgb.jpg": photo, "grey.jpg": photo.convert("L"), "rgb-progressive.jpg": photo}
    for name, im in kept.items():
        im.save(tmp_path / name, "JPEG", quality=88, progressive="progressive" in name)
    for name in kept:
        data = load_image(tmp_path / name, keep_jpeg=True)
        assert isinstance(data, bytes) and data == (tmp_path / name).read_bytes(), name
        decoded = decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=ImageReadMode.RGB)
        assert np.array_equal(decoded.permute(1, 2, 0).numpy(), np.asarray(load_image(tmp_path / name))), name

    exif = Image.Exif()
    exif[0x0112] = 6  # rotated: load_image turns it upright, a decoder would not
    photo.save(tmp_path / "rotated.jpg", "JPEG", exif=exif.tobytes())
    photo.convert("CMYK").save(tmp_path / "cmyk.jpg", "JPEG")
    photo.save(tmp_path / "photo.png")
    whole = (tmp_path / "rgb.jpg").read_bytes()
    (tmp_path / "cut.jpg").write_bytes(whole[: len(whole) * 3 // 4])  # truncated: Pillow's error, named
    photo.resize((DEFAULT_MAX_SIDE + 16, 600)).save(tmp_path / "wide.jpg", "JPEG")  # downscaled on load
    for name in ("rotated.jpg", "cmyk.jpg", "photo.png", "wide.jpg"):
        loaded = load_image(tmp_path / name, keep_jpeg=True)
        assert isinstance(loaded, Image.Image) and loaded.mode == "RGB", name
        assert np.array_equal(np.asarray(loaded), np.asarray(load_image(tmp_path / name))), name
    assert load_image(tmp_path / "rotated.jpg", keep_jpeg=True).size == (240, 320)
    with pytest.raises(ItemError, match="cut.jpg: cannot read image"):
        load_image(tmp_path / "cut.jpg", keep_jpeg=True)
    assert isinstance(load_image(tmp_path / "rgb.jpg", keep_jpeg=True, max_bytes=100), Image.Image)
