"""Copy a PTX file with its .version directive set: set_ptx_version.py VERSION IN OUT.

nvcc 13 writes the newest ISA it knows; an older ptxas refuses a .version it does not know, even
where every instruction is in its own ISA (wgmma and fence.proxy.async are in 8.0, CUDA 12.0).
"""

import re
import sys

version, src, dest = sys.argv[1:4]
text, n = re.subn(r"^(\s*\.version\s+)\d+\.\d+", rf"\g<1>{version}", open(src).read(), count=1,
                  flags=re.M)
if n != 1:
    sys.exit(f"{src}: no .version directive")
open(dest, "w").write(text)
