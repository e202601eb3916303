# A stand-in for torch with the parts apx_site.py's memory sampler reads (torch.cuda.*), so
# that the sampler can be tested without torch or a GPU. Importing it marks nothing as
# initialised: the test script sets torch.cuda._initialized and the counters.
from . import cuda  # noqa: F401
