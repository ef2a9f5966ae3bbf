"""Time `connote cv-probes build` on this machine: per 100 SG candidate captions (rewording through a loopback
OpenAI-compatible server + a small random GPT-2 scorer) and per 1,000 pool images (the embedded encoders'
index + retrieval), each a whole build into a fresh run folder, then the same build again (all resumed).

    python benchmarks/probes_build.py [--captions 102] [--images 1000] [--out /tmp/probes-bench]

Prints one JSON line per measurement with the load average beside it. The figures include loading the models.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.openai_server import send_json  # noqa: E402  (the loopback servers' one JSON reply)


class _Echo(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        caption = body["messages"][0]["content"][-1]["text"].rsplit("Caption: ", 1)[1]
        send_json(self, {"choices": [{"message": {"content": caption.replace(" a ", " a quiet ", 1)}}]})

    def log_message(self, *args):
        pass


def small_gpt2(folder: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.manual_seed(0)
    words = ["<unk>", "<s>"] + sorted({w for w in "a an some man woman people quiet church park street in at with "
                                       "prays pray runs run sits sit reads read eats eat".split()}) + list(".,")
    tk = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                pre_tokenizers.Punctuation(behavior="isolated")])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="<s>", unk_token="<unk>")
    GPT2LMHeadModel(GPT2Config(vocab_size=len(words), n_embd=256, n_layer=4, n_head=4, n_positions=128,
                               bos_token_id=1, eos_token_id=1)
                    ).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def timed(argv: list[str]) -> float:
    from connote.cli import main

    t = time.perf_counter()
    assert main(argv) == 0
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--captions", type=int, default=102)
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=Path("/tmp/probes-bench"))
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = args.out
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(0)
    pool = root / "pool"
    pool.mkdir(exist_ok=True)
    for k in range(args.images):
        p = pool / f"img{k:05d}.jpg"
        if not p.exists():
            base = rng.randint(0, 255, size=3)
            arr = np.clip(base + rng.randn(256, 256, 3) * 40, 0, 255).astype("uint8")
            Image.fromarray(arr).save(p, quality=85)
    verbs_per = [("pray", "agent={n};place=church|agent={n};place=park|agent={n};place=street"),
                 ("run", "agent={n};place=park|agent={n};place=street|agent={n};place=church"),
                 ("read", "agent={n};place=church|agent={n};place=park|agent={n};place=street")]
    lines = ["id,verb,roles,sg_images,pg_captions"]
    nouns = ["man", "woman", "people"]
    for i in range((args.captions + 2) // 3):
        verb, roles = verbs_per[i % 3]
        lines.append(f"v{i},{verb},{roles.format(n=nouns[i % 3])},pool/img00000.jpg,A {nouns[0]} sits in a park.")
    verbs = root / "verbs.csv"
    verbs.write_text("\n".join(lines) + "\n")
    small = root / "pool1"
    small.mkdir(exist_ok=True)
    (small / "a.jpg").write_bytes((pool / "img00001.jpg").read_bytes())
    lm = small_gpt2(root / "gpt2")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    import shutil

    for name in ("run-captions", "run-images"):
        shutil.rmtree(root / name, ignore_errors=True)
    cap_args = ["cv-probes", "build", str(verbs), "--pool", str(small), "--out", str(root / "run-captions"), "--quiet",
                "--rewriter", f"openai:bench?base_url={url}&max_retries=0", "--scorer", f"lm-perplexity:{lm}"]
    first = timed(cap_args)
    again = timed(cap_args)
    n_caps = 3 * ((args.captions + 2) // 3)
    print(json.dumps({"measure": "captions", "captions": n_caps, "seconds": round(first, 2),
                      "seconds_per_100_captions": round(first / n_caps * 100, 2), "resumed_rerun_seconds":
                      round(again, 2), "load_average": os.getloadavg(), "cpus": os.cpu_count()}))
    img_verbs = root / "verbs4.csv"
    img_verbs.write_text("\n".join(lines[:5]) + "\n")
    img_args = ["cv-probes", "build", str(img_verbs), "--pool", str(pool), "--out", str(root / "run-images"), "--quiet",
                "--batch-size", "32"]
    first = timed(img_args)
    again = timed(img_args)
    print(json.dumps({"measure": "pool images", "images": args.images, "seconds": round(first, 2),
                      "seconds_per_1000_images": round(first / args.images * 1000, 2),
                      "resumed_rerun_seconds": round(again, 2), "load_average": os.getloadavg(),
                      "cpus": os.cpu_count()}))
    server.shutdown()


if __name__ == "__main__":
    main()
