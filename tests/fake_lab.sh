#!/bin/sh
# A lab that goes wrong in the ways a student's build can, to test that check_lab.py reports
# each plainly. check_lab.py passes "--seed N" first; the seed picks the failure:
#   1 crashes (SIGSEGV) after STEP 1   2 prints nothing   3 prints a number it cannot read
#   4 never ends
case "$2" in
  1) echo "STEP 1: input x is 4 tokens x 6 dims"; kill -SEGV $$ ;;
  2) exit 0 ;;
  3) printf 'STEP 1: input x is 1 tokens x 1 dims\n    x, shape (1, 1):\n      t0: [0.5x]\n' ;;
  4) exec sleep 30 ;;
esac
