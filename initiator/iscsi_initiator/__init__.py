"""iscsi_initiator."""
