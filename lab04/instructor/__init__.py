"""lab04.instructor: the starter and the platforms' autograders, made from the project (its
command: instructor/make_starter.py)."""
