# Runs a moto server on loopback (port 0: the OS picks a free one), prints "ready <port>",
# and stops it when standard input closes, that is when the process that started it ends.
import sys

from moto.server import ThreadedMotoServer

server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
host, port = server.get_host_and_port()
print(f"ready {port}", flush=True)
sys.stdin.read()
server.stop()
