# tracedpkg: a package whose functions test_apx_site.py traces by name (tracedpkg.sub.mod).
