"""cxgbit-ext: iSCSI PDU-offload target framework for LIO (Python side)."""

from setuptools import setup

setup(
    name="cxgbit-ext",
    version="0.3.0",
    description="iSCSI PDU-offload target framework for the Linux LIO target",
    license="GPL-2.0-only",
    python_requires=">=3.11",
    package_dir={
        "cxgbit_ext": "userspace/cxgbit_ext",
        "targetcli_offload": "targetcli-plugin/targetcli_offload",
        "iscsi_initiator": "initiator/iscsi_initiator",
    },
    packages=["cxgbit_ext", "targetcli_offload", "iscsi_initiator"],
    install_requires=["rtslib-fb", "configshell-fb", "prometheus-client"],
    data_files=[("share/man/man1", ["docs/cxgbit-ext.1"])],
    entry_points={
        "console_scripts": [
            "cxgbit-ext = cxgbit_ext.cli:main",
            "targetcli-offload = targetcli_offload.main:main",
            "cxe-initiator = iscsi_initiator.cli:main",
        ],
    },
)
