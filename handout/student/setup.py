"""mytorch (student version): implement the recurrent cells' forward and backward passes by hand."""
from setuptools import setup

setup(
    name="mytorch",
    version="0.1.0",
    description="Recurrent cells with hand-derived backward passes, in NumPy: the assignment",
    python_requires=">=3.9",
    packages=["mytorch", "mytorch.nn", "mytorch.optim", "autograder", "autograder.sandbox", "autograder.parts",
              "autograder.diagnosis", "autograder.instructor"],
    package_data={"autograder": ["data/*.npz", "data/manifest.json", "course.toml"]},
    install_requires=["numpy>=1.22", "matplotlib>=3.5", 'tomli>=1.1; python_version < "3.11"'],
    extras_require={"notebooks": ["jupyterlab"]},
    entry_points={"console_scripts": ["mytorch-autograder=autograder.__main__:main"]},
)
