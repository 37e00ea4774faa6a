#!/bin/sh
# A lab that goes wrong in the ways a student's build can, to test that check_lab.py reports
# each plainly and within its limits. check_lab.py passes "--seed N" first; the seed picks
# the failure:
#   1 crashes (SIGSEGV) after STEP 1   2 prints nothing   3 prints a number it cannot read
#   4 never ends                        5 prints forever   6 prints forever on standard error
#   7 exits, leaving a child that holds its output open and never ends
case "$2" in
  1) echo "STEP 1: input x is 4 tokens x 6 dims"; kill -SEGV $$ ;;
  2) exit 0 ;;
  3) printf 'STEP 1: input x is 1 tokens x 1 dims\n    x, shape (1, 1):\n      t0: [0.5x]\n' ;;
  4) exec sleep 30 ;;
  5) echo "STEP 1: input x is 4 tokens x 6 dims"; exec yes "      t0: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]" ;;
  6) exec yes "lab04_attention: something went wrong" >&2 ;;
  7) echo "STEP 1: input x is 4 tokens x 6 dims"; sleep 30 & exit 0 ;;
esac
