# What a module's link runs under, beside the package's one Ninja. Under the jobserver
# (GNU make 4.4's fifo, MAKEFLAGS --jobserver-auth=fifo:PATH) this process is one client
# with one implicit token: the Ninja has it while it runs (GNU make's rule for a child it
# starts), and each link reads a token from the fifo, or takes the implicit one once the
# Ninja has ended, and gives it back after. With a fixed job count there is no fifo: links
# wait for the Ninja to end and then run that many at a time.
import os
import select
import threading

LOCAL = "local"  # a token of this process's own, not the fifo's


class LinkTokens:
    def __init__(self, path, fixed):
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK) if path else None
        self.cond = threading.Condition()
        self.free = 0  # local tokens: the implicit one, or the fixed count, once the Ninja ends
        self.after_ninja = 1 if path else max(1, fixed)

    def ninja_ended(self):
        with self.cond:
            self.free = self.after_ninja
            self.cond.notify_all()

    def take(self, stop):
        # A token (LOCAL, or the fifo's byte); None once `stop` is set.
        while not stop.is_set():
            with self.cond:
                if self.free > 0:
                    self.free -= 1
                    return LOCAL
                if self.fd is None:
                    self.cond.wait(0.2)
                    continue
            if select.select([self.fd], [], [], 0.2)[0]:
                try:
                    got = os.read(self.fd, 1)
                except BlockingIOError:
                    continue
                if got:
                    return got
        return None

    def give(self, token):
        if token == LOCAL:
            with self.cond:
                self.free += 1
                self.cond.notify_all()
        elif token:
            os.write(self.fd, token)
