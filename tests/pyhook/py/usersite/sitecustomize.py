# The user's own sitecustomize: apx_site.py must import it after its own hooks.
import os
import sys

sys.apx_test_user_sitecustomize = os.environ.get("APX_TEST_USER_SITE_VALUE", "ran")
