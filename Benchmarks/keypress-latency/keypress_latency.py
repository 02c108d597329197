#!/usr/bin/env python3
"""Keypress to screen, with and without prediction, over a slow connection.

Starts tetherd (memory only) on 127.0.0.1, a TCP proxy in front of it that delays every chunk by
DELAY ms in each direction (a round trip of 2 x DELAY added), and `tether calculator` in tmux
through the proxy. Then, TRIALS times: a digit key (predicted: the display changes at once) and
`=` (not predicted: the history line appears with the server's answer), each timed from
`tmux send-keys` to the first capture-pane that shows it. Prints the medians.

    Benchmarks/keypress-latency/keypress_latency.py [--bin .build/debug] [--delay 100] [--trials 10]
"""
import argparse, asyncio, os, re, shutil, socket, statistics, subprocess, sys, threading, time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_proxy(listen_port, target_port, delay):
    """A thread running an asyncio proxy that delays each chunk by `delay` seconds, in order."""
    loop = asyncio.new_event_loop()

    async def pump(reader, writer):
        try:
            while data := await reader.read(65536):
                loop.call_later(delay, writer.write, data)
        except (ConnectionError, asyncio.CancelledError):
            pass
        loop.call_later(delay, writer.close)

    async def handle(client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        await asyncio.gather(pump(client_reader, server_writer), pump(server_reader, client_writer))

    async def serve():
        server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
        async with server:
            await server.serve_forever()

    threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True).start()


def capture(session):
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for(session, condition, timeout=10.0):
    """Seconds until `condition(screen)` holds, polling capture-pane as fast as it runs."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition(capture(session)):
            return time.monotonic() - start
    sys.exit(f"timed out; the screen:\n{capture(session)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=".build/debug")
    parser.add_argument("--delay", type=float, default=100, help="ms added in each direction")
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    if not shutil.which("tmux"):
        sys.exit("needs tmux")
    server_port, proxy_port = free_port(), free_port()
    daemon = subprocess.Popen([os.path.join(args.bin, "tetherd"), "--port", str(server_port), "--memory-only", "--log-level", "warning"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    session = f"keypress-{os.getpid()}"
    try:
        for line in daemon.stdout:
            if "listening" in line:
                break
        start_proxy(proxy_port, server_port, args.delay / 1000)
        tether = os.path.abspath(os.path.join(args.bin, "tether"))
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24",
                        f"{tether} --url ws://127.0.0.1:{proxy_port} calculator"], check=True)
        wait_for(session, lambda screen: "● live" in screen and "% mod" in screen, timeout=20)
        predicted, unpredicted = [], []
        settled = lambda screen: "waiting for the server" not in screen
        for trial in range(args.trials):
            digit = str(1 + trial % 9)
            subprocess.run(["tmux", "send-keys", "-t", session, "Escape"], check=True)
            wait_for(session, lambda screen: " 0│" in screen and settled(screen))
            time.sleep(2 * args.delay / 1000 + 0.2)
            subprocess.run(["tmux", "send-keys", "-t", session, "-l", digit], check=True)
            predicted.append(wait_for(session, lambda screen: f" {digit}│" in screen))
            time.sleep(2 * args.delay / 1000 + 0.2)
            line = re.compile(rf"│{digit} = {digit} +│")
            count = len(line.findall(capture(session)))
            subprocess.run(["tmux", "send-keys", "-t", session, "-l", "="], check=True)
            unpredicted.append(wait_for(session, lambda screen: len(line.findall(screen)) > count))
        ms = lambda values: f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"
        print(f"{args.trials} trials, {args.delay:.0f} ms added each way")
        print(f"a digit, predicted:   {ms(predicted)}")
        print(f"=, not predicted:     {ms(unpredicted)}")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        daemon.terminate()
        daemon.wait(timeout=10)


if __name__ == "__main__":
    main()
