"""mytorch: recurrent networks in pure NumPy with hand-written backward passes, an autograder and a handout."""
from setuptools import setup

setup(
    name="mytorch",
    version="0.1.0",
    description="Recurrent cells (RNN, GRU, TF GRU block, GMU, TGRU, LSTM) with hand-derived backward passes, in NumPy",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=["mytorch", "mytorch.nn", "mytorch.optim", "autograder", "autograder.sandbox", "autograder.parts",
              "autograder.diagnosis", "autograder.instructor", "handout"],
    package_data={"autograder": ["data/*.npz", "data/manifest.json"],
                  "handout": ["assignment/*.md", "student/*", "gradescope/*", "prairielearn/*", "autolab/*",
                             "site_pages/*"]},
    install_requires=["numpy>=1.22", "matplotlib>=3.5", 'tomli>=1.1; python_version < "3.11"'],
    extras_require={
        "test": ["pytest>=7", "pytest-xdist>=3", "nbclient>=0.7", "nbformat>=5.7", "ipykernel>=6", "playwright>=1.40",
                 "ruff>=0.6"],
        # python -m handout site: Sphinx with myst-nb, the Furo theme, jupyter-cache for executed notebooks,
        # and MathJax 3's own distribution packaged for pip (copied into the site; no CDN at view time)
        "site": ["sphinx>=7", "myst-nb>=1.1", "furo>=2024.1", "jupyter-cache>=1.0", "nbclient>=0.7",
                 "ipykernel>=6", "matplotlib-inline>=0.1", "django-static-mathjax>=3.2.2,<4"],
        "oracle": ["torch"],
    },
    entry_points={"console_scripts": ["mytorch-autograder=autograder.__main__:main"]},
    license="MIT",
)
