"""runport's help for your own tests (docs/testing-with-mocks.md), shipped in runport-mock.

The pytest plugin (``pytest11`` entry point, loaded by pytest wherever runport-mock is
installed) gives every test the fixtures ``scripted_model`` (``ScriptedModels``) and
``function_model`` (``FunctionModels``), and guards the session: runport's HTTP adapters refuse
every request to a host that is not loopback unless ``RUNPORT_ALLOW_MODEL_REQUESTS=1`` or the
test is marked ``@pytest.mark.allow_model_requests``. ``assert_streamed`` checks what a stream
said; ``script`` and ``call`` write a model's turns as Python values. Importing this module
needs no pytest.
"""

from runport.testing._models import FunctionModels, ScriptedModels
from runport.testing._names import ALLOW_MODEL_REQUESTS
from runport.testing._script import Call, Turn, call, script
from runport.testing._streamed import assert_streamed

__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "Call",
    "FunctionModels",
    "ScriptedModels",
    "Turn",
    "assert_streamed",
    "call",
    "script",
]
