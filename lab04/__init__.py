"""lab04: the code of the lab's checker, its class grader and the instructor's kit, as one
package: lab04.checker (a build of the lab checked step by step against the reference),
lab04.grader (a class graded, its gradebooks and files) and lab04.instructor (the starter and
the platforms' autograders). Each module imports others by their qualified names, lower layers
only (docs/maintaining.md's table, tests/import_layers_test.py). The commands instructors and
students run stay where the documents name them (checker/check_lab.py, grader/grade_class.py,
...): each a launcher of a few lines that puts the project on sys.path and calls its module's
main.

  PROJECT   the project's folder (this package's parent): its build, the lab, the engine
"""
import os

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
