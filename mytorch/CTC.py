"""CMU 11-785's module name for its CTC classes: ``from CTC import CTC, CTCLoss`` (with ``mytorch/`` on the
path, as the course's tests put it) or ``from mytorch.CTC import CTC, CTCLoss``. The code is in
``mytorch/nn/ctc_course.py``."""
try:
    from mytorch.nn.ctc_course import CTC, CTCLoss
except ModuleNotFoundError:                    # imported as a top-level module with only mytorch/ on the path
    import os
    import sys
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from mytorch.nn.ctc_course import CTC, CTCLoss

__all__ = ["CTC", "CTCLoss"]
