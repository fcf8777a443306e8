"""cxgbit_ext."""
