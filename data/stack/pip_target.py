# Runs pip for a target machine that may not be this one: pip's resolver, with the PEP 508
# marker environment of the target (platform_machine, python_version ...) instead of the
# running interpreter's, so `; platform_machine == "x86_64"` dependencies are dropped for
# an aarch64 target as that machine's pip would drop them. Tags are pip's own
# (--platform, --python-version). Used by tailor stack: python -c SCRIPT ENV_JSON ARGS...
import json
import sys

from pip._vendor.packaging import markers

_target = json.loads(sys.argv[1])
_base = markers.default_environment
markers.default_environment = lambda: {**_base(), **_target}

from pip._internal.cli.main import main  # noqa: E402

sys.exit(main(sys.argv[2:]))
