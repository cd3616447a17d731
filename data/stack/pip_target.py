# Runs pip for a target machine that may not be this one: pip's resolver, with the PEP 508
# marker environment of the target (platform_machine, python_version ...) instead of the
# running interpreter's, so `; platform_machine == "x86_64"` dependencies are dropped for
# an aarch64 target as that machine's pip would drop them. Tags are pip's own
# (--platform, --python-version). Used by tailor stack: python -c SCRIPT ENV_JSON ARGS...
#
# What a resolution read, so that tailor can tell later whether it still holds:
#   TAILOR_PIP_SEEN=FILE   after pip, FILE gets a JSON object of fingerprints: the sha256 of
#                          every index or --find-links page pip fetched (by URL), of the
#                          local --find-links folders, of every requirement file read, of
#                          pip's configuration (files and PIP_* variables), of the tags
#                          the target accepts and of the installed distributions when
#                          they count (no --ignore-installed or --target); this Python,
#                          pip and the marker environment.
#   TAILOR_PIP_CHECK=FILE  FILE is such an object from an earlier run: pip parses the same
#                          arguments, fetches the same pages again (in parallel, through
#                          its own session: certificates, proxies, credentials, its HTTP
#                          cache) and stops before resolving; TAILOR_PIP_SEEN gets the
#                          fingerprints as they are now.
# When the pip internals this needs are missing (another pip), the "seen" file is not
# written: tailor then neither stores nor reuses the resolution.
import hashlib
import json
import os
import sys

from pip._vendor.packaging import markers

_target = json.loads(sys.argv[1])
_base = markers.default_environment
markers.default_environment = lambda: {**_base(), **_target}

from pip._internal.cli.main import main  # noqa: E402

_seen_path = os.environ.get("TAILOR_PIP_SEEN")
_check_path = os.environ.get("TAILOR_PIP_CHECK")
_seen = {"pages": {}, "files": {}, "config": None, "installed": None, "find_links": None, "tags": None}
_finder = []
_hooked = False


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _digest(value):
    return _sha(json.dumps(value, sort_keys=True, default=str).encode())


def _installed_fingerprint():
    from pip._internal.metadata import get_default_environment

    env = get_default_environment()
    return _digest(sorted([str(d.canonical_name), str(d.version)] for d in env.iter_all_distributions()))


def _find_links_fingerprint(find_links):
    """Local --find-links folders and files: names, sizes and times (pages are fetched)."""
    from pip._internal.utils.urls import url_to_path

    out = []
    for entry in find_links:
        path = url_to_path(entry) if entry.startswith("file:") else entry
        if "://" in path:
            continue
        if os.path.isdir(path):
            listing = []
            for e in os.scandir(path):
                st = e.stat()
                listing.append([e.name, st.st_size, st.st_mtime_ns])
            out.append([entry, sorted(listing)])
        elif os.path.isfile(path):
            st = os.stat(path)
            out.append([entry, st.st_size, st.st_mtime_ns])
        else:
            out.append([entry, None])
    return _digest(out)


def _hook(expected):
    """Records what pip reads; with `expected` (a check), stops pip before it resolves, with
    the same pages fetched again, in parallel."""
    global _hooked
    from pip._internal.configuration import Configuration
    from pip._internal.index.collector import LinkCollector
    from pip._internal.models.link import Link
    from pip._internal.req import req_file
    from pip._internal.req.req_set import RequirementSet
    from pip._internal.resolution.resolvelib.resolver import Resolver

    fetch = LinkCollector.fetch_response

    def fetch_response(self, location):
        page = fetch(self, location)
        _seen["pages"][location.url] = None if page is None else _sha(page.content)
        return page

    LinkCollector.fetch_response = fetch_response

    load = Configuration.load

    def load_config(self):
        load(self)
        _seen["config"] = _digest(sorted([k, v] for k, v in self.items()))

    Configuration.load = load_config

    get_content = req_file.get_file_content

    def get_file_content(url, session):
        location, content = get_content(url, session)
        _seen["files"][url] = _sha(content.encode())
        return location, content

    req_file.get_file_content = get_file_content

    resolve = Resolver.resolve

    def resolve_or_check(self, root_reqs, check_supported_wheels):
        finder = self.factory._finder
        _finder.append(finder)
        if expected is None:
            return resolve(self, root_reqs, check_supported_wheels)
        from concurrent.futures import ThreadPoolExecutor

        urls = list(expected.get("pages", {}))
        with ThreadPoolExecutor(max_workers=max(1, min(8, len(urls)))) as pool:
            list(pool.map(lambda url: finder._link_collector.fetch_response(Link(url)), urls))
        return RequirementSet(check_supported_wheels=check_supported_wheels)

    Resolver.resolve = resolve_or_check
    _hooked = True


def _tags_fingerprint(finder):
    target = finder.target_python
    tags = getattr(target, "get_sorted_tags", None) or target.get_tags
    return _digest([str(t) for t in tags()])


def _counts_installed(args):
    return not any(a in ("--ignore-installed", "-I", "--target", "-t") or a.startswith("--target=") for a in args)


if _seen_path:
    try:
        _expected = None
        if _check_path:
            with open(_check_path) as f:
                _expected = json.load(f)
        _hook(_expected)
    except Exception:  # another pip: resolve as before, store nothing
        _hooked = False

status = main(sys.argv[2:])
if _seen_path and _hooked and status == 0:
    try:
        import pip

        if _counts_installed(sys.argv[2:]):
            _seen["installed"] = _installed_fingerprint()
        if _finder:
            _seen["find_links"] = _find_links_fingerprint(_finder[0].find_links)
            _seen["tags"] = _tags_fingerprint(_finder[0])
        _seen["runtime"] = [sys.executable, sys.version, pip.__version__, markers.default_environment()]
        with open(_seen_path, "w") as f:
            json.dump(_seen, f, sort_keys=True)
    except Exception:
        pass
sys.exit(status)
