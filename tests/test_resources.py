"""A process's peak memory is its own, not that of the process that started it."""

import json
import subprocess
import sys


def test_the_peak_is_not_inherited_from_a_large_parent():
    """getrusage's ru_maxrss survives execve with the forking parent's peak: the memory-bound
    test, late in a full pytest session, measured pytest (980 MB) instead of the build."""
    ballast = bytearray(400 * 2 ** 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1  # resident, as a parent that has done work is
    out = subprocess.run(
        [sys.executable, "-c", "import json, resource\nfrom graphrag_ray.resources import "
         "driver_rss_mb\nprint(json.dumps([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss"
         " // 1024, driver_rss_mb()[1]]))"], capture_output=True, text=True, timeout=120)
    inherited, own = json.loads(out.stdout)
    assert inherited >= 400 and own < 200, (inherited, own)
    del ballast
