# The package's one Ninja at run time: it waits until every module has written its
# build.ninja (or ended without one), writes the package's build.ninja over them all
# (ninja_merge), runs `ninja -v` there and lets each module link as soon as its stamp edge
# says its own objects are built.
import os
import subprocess
import threading
import time

from . import say
from .ninja_merge import STAMP_DIR, STAMP_LINE, package_manifest, stamp


class PackageNinja:
    def __init__(self, base, count, order, tokens, jobs_arg, stop, split_max, times):
        self.base, self.order, self.tokens = base, order, tokens
        self.jobs_arg, self.stop = jobs_arg, stop
        self.split_max = split_max  # None: every unit is split already (few units); 0: none learned
        self.times = times  # schedule.UnitTimes
        self.cond = threading.Condition()
        self.expected = count
        self.ended_early = 0
        self.folders = {}  # build folder -> module number
        self.state = {}    # module number -> "wait", "done", "failed"
        self.started = False
        self.rc = None

    def left(self):
        # A module ended before its compile (failed, or nothing to build).
        with self.cond:
            self.ended_early += 1
            self._maybe_start()

    def _maybe_start(self):
        if self.started or len(self.folders) + self.ended_early < self.expected:
            return
        self.started = True
        if self.stop.is_set() or not self.folders:
            for n in self.state:
                self.state[n] = "failed"
            self.tokens.ninja_ended()
            self.cond.notify_all()
            return
        threading.Thread(target=self._run, daemon=True).start()

    def wait_for(self, folder, ext, error_prefix):
        # Called in the module's thread in place of torch's own Ninja run -> the token its
        # link runs under.
        with self.cond:
            number = self.order.index(id(ext))
            self.folders[folder] = number
            self.state[number] = "wait"
            self._maybe_start()
            while self.state[number] == "wait" and not self.stop.is_set():
                self.cond.wait(0.2)
            state = self.state[number]
        if state != "done":
            # As torch's own Ninja run fails (a RuntimeError, which setuptools does not
            # turn into a warning even for an optional module).
            raise RuntimeError("%s: the package's Ninja %s" % (
                error_prefix, "ended with exit %s" % self.rc if self.rc else "stopped"))
        token = self.tokens.take(self.stop)
        if token is None:
            raise RuntimeError(error_prefix + ": the build was stopped")
        return token

    def _ninja(self):
        command = ["ninja", "-v"] + self.jobs_arg
        proc = subprocess.Popen(command, cwd=self.base, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=os.environ.copy())

        def watch():
            while proc.poll() is None:
                if self.stop.wait(0.5):
                    proc.terminate()
                    return
        threading.Thread(target=watch, daemon=True).start()
        for line in proc.stdout:
            text = line.rstrip(b"\r\n").decode("utf-8", "replace")
            done = STAMP_LINE.search(text)
            n = int(done.group(1)) if done else None
            if n is None:
                os.write(1, line)
                continue
            with self.cond:
                if self.state.get(n) == "wait":
                    self.state[n] = "done"
                    self.cond.notify_all()
        return proc.wait()

    def _write_manifest(self):
        os.makedirs(os.path.join(self.base, STAMP_DIR), exist_ok=True)
        for n in self.state:
            try:
                os.unlink(os.path.join(self.base, stamp(n)))
            except FileNotFoundError:
                pass
        manifest = os.path.join(self.base, "build.ninja")
        with open(manifest + ".tmp", "w") as f:
            f.write(package_manifest(self.folders, self.times, self.split_max, self.jobs_arg))
        os.replace(manifest + ".tmp", manifest)
        with open(os.path.join(self.base, ".tailor_start"), "w") as f:
            f.write("%d\n" % int(time.time() * 1000))

    def _run(self):
        # Any failure here (a module file that cannot be read, no ninja) fails the
        # waiting modules with it; none of them may wait for ever.
        try:
            self._write_manifest()
            rc = self._ninja()
        except Exception as e:
            say.line("the package's Ninja did not run: %s" % e)
            rc = -1
        with self.cond:
            self.rc = rc
            for n, st in self.state.items():
                if st == "wait":
                    self.state[n] = "done" if rc == 0 else "failed"
            self.tokens.ninja_ended()
            self.cond.notify_all()
