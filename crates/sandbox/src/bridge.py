# Engram's local API bridge, run inside the sandbox before any user code.
# The room has no network of its own, only loopback. When ENGRAM_BRIDGE_SOCKET (a Unix socket
# bound into the room by the sandbox) and ENGRAM_BRIDGE_PORT are set, engram_bridge_start()
# listens on 127.0.0.1:<port> in the room and relays every connection to that socket, so a
# client such as letta_client reaches Engram at its usual address and nowhere else.


def engram_bridge_start():
    import os
    import socket
    import threading

    path = os.environ.get("ENGRAM_BRIDGE_SOCKET")
    port = os.environ.get("ENGRAM_BRIDGE_PORT")
    if not path or not port:
        return None
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
    except OSError:
        # With the host's network the port may be Engram's own server: nothing to bridge.
        listener.close()
        return None
    # letta_client 1.x reads its address from here when a tool does not name one.
    os.environ.setdefault("LETTA_BASE_URL", "http://localhost:" + port)

    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
                try:
                    s.shutdown(how)
                except OSError:
                    pass

    def serve(client):
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            return
        back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        back.start()
        pump(client, upstream)
        back.join()
        client.close()
        upstream.close()

    def accept():
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(client,), daemon=True).start()

    threading.Thread(target=accept, name="engram-bridge", daemon=True).start()
    return listener.getsockname()[1]
