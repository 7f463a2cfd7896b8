#!/usr/bin/env python3
"""Drives `vidax serve` with the OpenAI Python SDK (never run in CI; see docs/serve.md).

    python3 -m venv v && v/bin/pip install -r tools/openai_sdk/requirements.txt
    vidax make-demo demo && vidax serve --weights demo --data data --port 8080 &
    v/bin/python tools/openai_sdk/drive_server.py --base-url http://127.0.0.1:8080/v1

client.videos.create -> retrieve (polled) -> download_content (video and thumbnail) -> list -> delete.
"""
import argparse
import sys
import time

import openai


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    ap.add_argument("--api-key", default="unused")
    ap.add_argument("--out", default="sdk_video.mp4")
    a = ap.parse_args()
    client = openai.OpenAI(base_url=a.base_url, api_key=a.api_key)
    # size and seconds as the SDK types them; steps and seed are our extensions (extra_body).
    v = client.videos.create(model="wan2.1-tiny-demo", prompt="a red panda", size="48x32", seconds="0.25",
                             extra_body={"steps": 2, "seed": 1})
    print("created", v.id, v.status, v.size, v.seconds)
    assert v.status == "queued" and v.object == "video"
    deadline = time.time() + 120
    while v.status in ("queued", "in_progress") and time.time() < deadline:
        time.sleep(0.2)
        v = client.videos.retrieve(v.id)
    print("finished", v.status, v.progress)
    assert v.status == "completed", v
    content = client.videos.download_content(v.id)
    data = content.read()
    assert data[4:8] == b"ftyp", data[:16]
    open(a.out, "wb").write(data)
    thumb = client.videos.download_content(v.id, variant="thumbnail").read()
    assert thumb[:8] == b"\x89PNG\r\n\x1a\n"
    ids = [x.id for x in client.videos.list(limit=10)]
    assert v.id in ids
    try:
        client.videos.retrieve("video_0123456789abcdef0123456789abcdef")
        raise AssertionError("a missing video was found")
    except openai.NotFoundError as e:
        print("missing video:", e.status_code, e.body.get("code") if isinstance(e.body, dict) else e.body)
    try:
        client.videos.create(model="wan2.1-tiny-demo", prompt="x", size="50x32")
        raise AssertionError("a bad size was accepted")
    except openai.BadRequestError as e:
        print("bad size:", e.status_code, e.body.get("param") if isinstance(e.body, dict) else e.body)
    d = client.videos.delete(v.id)
    print("deleted", d.id, d.deleted)
    print(f"OK with openai {openai.__version__}: {len(data)} bytes of MP4 in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
