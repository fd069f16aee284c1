"""Run llama.cpp's OpenAI-compatible server (xllamacpp) until stdin closes.

Started by the live_local fixture as ``python _llama_server.py MODEL_PATH PORT``; prints
``listening <address>`` once the server is up. Ending stdin (the test session ending, or the
test process dying) stops the server, so no server outlives its tests.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import xllamacpp


def main() -> None:
    model_path, port = sys.argv[1], int(sys.argv[2])
    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 2048
    params.n_batch = 512
    params.n_parallel = 1
    params.n_predict = 48  # a cap per request, whatever the request asks
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.sampling.temp = 0.0
    params.sampling.top_k = 1
    params.sampling.seed = 1234
    params.ui = False
    params.use_jinja = True
    params.chat_template = (Path(__file__).parent / "tool_template.jinja").read_text()
    params.warmup = False
    server = xllamacpp.Server(params)
    print("listening", server.listening_address, flush=True)
    sys.stdin.read()
    sys.stdout.flush()
    os._exit(0)  # the server's threads end with the process; no slow native teardown


if __name__ == "__main__":
    main()
