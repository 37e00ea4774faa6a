"""lab04.grader: a class graded, one student at a time, into its gradebooks and files (its
commands: grader/, which grader/README.md describes)."""
