#!/usr/bin/env python3
"""The committed fag-matrix suite is what its generator writes (edit the
generator, rerun it, commit both).  Usage: check_fag_matrix_json.py SUITES_DIR"""
import os
import subprocess
import sys
import tempfile

suites = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "fag_matrix.json")
    subprocess.run([sys.executable, os.path.join(suites, "gen_fag_matrix.py"), out], check=True)
    same = open(out).read() == open(os.path.join(suites, "fag_matrix.json")).read()
print("fag_matrix.json matches its generator" if same else
      "FAIL verify/suites/fag_matrix.json differs from gen_fag_matrix.py's output: rerun the generator")
sys.exit(0 if same else 1)
