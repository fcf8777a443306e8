"""targetcli extension for cxgbit-ext offloaded portals (targetcli-offload)."""
