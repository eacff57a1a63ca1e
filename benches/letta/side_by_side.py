"""Messages per second and time per message of a Letta-compatible server under load.

The same client load against Letta and against `engram serve` (SQLite, or PostgreSQL with
`--database`), each on the scripted model (`mock-llm`), so the figures differ only by the
server: N clients, each sending its messages one after another to its own agent over
loopback HTTP (`POST /v1/agents/{id}/messages`), after one warm-up message per agent.

    python side_by_side.py --url http://127.0.0.1:8283 --model-url http://127.0.0.1:PORT/v1 \
        [--token T] [--clients 8] [--messages 20]

Prints one JSON line: messages/s, p50 and p95 per message (ms), and the failures (a reply
without an assistant message counts as one). Standard library only.
"""

import argparse
import json
import statistics
import threading
import time
import urllib.request


def request(url, token, method, path, body=None, timeout=600):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"null")


def create_agent(args, name):
    body = {
        "name": name,
        "memory_blocks": [
            {"label": "human", "value": ""},
            {"label": "persona", "value": "I am a helpful assistant."},
        ],
        "llm_config": {
            "model": "mock-small",
            "model_endpoint_type": "openai",
            "model_endpoint": args.model_url,
            "context_window": 32000,
        },
        "embedding_config": {
            "embedding_model": "mock-embed",
            "embedding_endpoint_type": "openai",
            "embedding_endpoint": args.model_url,
            "embedding_dim": 64,
        },
    }
    return request(args.url, args.token, "POST", "/v1/agents/", body)["id"]


def said(reply):
    return any(m.get("message_type") == "assistant_message" for m in reply.get("messages", []))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--model-url", required=True)
    p.add_argument("--token", default=None)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--messages", type=int, default=20)
    args = p.parse_args()

    agents = [create_agent(args, f"load-{i}") for i in range(args.clients)]
    for a in agents:
        request(args.url, args.token, "POST", f"/v1/agents/{a}/messages",
                {"messages": [{"role": "user", "content": "hello, my name is Ana"}]})

    latencies, failures, lock = [], [], threading.Lock()

    def client(agent):
        for i in range(args.messages):
            body = {"messages": [{"role": "user", "content": f"note {i}: I like tea number {i}"}]}
            start = time.perf_counter()
            try:
                ok = said(request(args.url, args.token, "POST", f"/v1/agents/{agent}/messages", body))
            except Exception as e:  # a failed message is counted, not fatal
                ok = False
                with lock:
                    failures.append(str(e)[:200])
            took = (time.perf_counter() - start) * 1000
            with lock:
                latencies.append(took)
                if not ok and len(failures) < 5:
                    failures.append("no assistant message")

    threads = [threading.Thread(target=client, args=(a,)) for a in agents]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    latencies.sort()
    print(json.dumps({
        "messages": len(latencies),
        "messages_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 1),
        "failures": failures[:5],
    }))


if __name__ == "__main__":
    main()
