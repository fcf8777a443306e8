"""targetcli_offload."""
