"""lab04.checker: a build of the lab checked step by step against the reference, and graded
(its commands: checker/, which checker/README.md describes)."""
