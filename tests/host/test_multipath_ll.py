"""The scale-out guests read dm-multipath's maps from ``multipath -ll``.

The initiator learns from it which maps exist, which sd paths each has and
which path the map uses now (testbed/scaleout_guest.py). multipath pads a
path's H:C:T:L to the widest of its map, so once the initiator has ten
SCSI hosts or more (three images on three gateways, each its own target:
nine sessions), a map of hosts 9 and 10 lists "9:0:0:0  sdd".
"""

from __future__ import annotations

from testbed.scaleout_guest import active_sd, parse_maps

# what perf/scaleout's initiator printed with three targets on three gateways
# (hosts 6 to 14); dm-1 mixes one- and two-digit hosts
THREE_TARGETS = """\
36001405078b8f26fbac5bbcbc8e8c3c4 dm-1 LIO-ORG,IBLOCK
size=128M features='1 queue_if_no_path' hwhandler='1 alua' wp=rw
|-+- policy='queue-length 0' prio=10 status=enabled
| `- 9:0:0:0  sdd 8:48 active ready running
|-+- policy='queue-length 0' prio=50 status=active
| `- 10:0:0:0 sde 8:64 active ready running
`-+- policy='queue-length 0' prio=10 status=enabled
  `- 11:0:0:0 sdf 8:80 active ready running
360014055f12946979bf58678ae6759e2 dm-0 LIO-ORG,IBLOCK
size=128M features='1 queue_if_no_path' hwhandler='1 alua' wp=rw
|-+- policy='queue-length 0' prio=50 status=active
| `- 6:0:0:0 sda 8:0  active ready running
|-+- policy='queue-length 0' prio=10 status=enabled
| `- 7:0:0:0 sdb 8:16 active ready running
`-+- policy='queue-length 0' prio=10 status=enabled
  `- 8:0:0:0 sdc 8:32 active ready running
"""


def test_every_path_of_every_map_is_read_however_it_is_padded() -> None:
    assert parse_maps(THREE_TARGETS) == {
        "36001405078b8f26fbac5bbcbc8e8c3c4": ["sdd", "sde", "sdf"],
        "360014055f12946979bf58678ae6759e2": ["sda", "sdb", "sdc"],
    }


def test_the_active_groups_path_is_the_one_in_use() -> None:
    dm1, dm0 = THREE_TARGETS.split("360014055f")
    assert active_sd(dm1) == "sde" and active_sd("360014055f" + dm0) == "sda"
    # the first path listed is in the active group, padded
    assert active_sd(dm1.replace("prio=10 status=enabled\n| `- 9", "prio=10 status=active\n| `- 9", 1)
                     .replace("prio=50 status=active", "prio=50 status=enabled")) == "sdd"  # fmt: skip
    # a path of the active group that is down is not in use
    assert active_sd(dm1.replace("sde 8:64 active", "sde 8:64 failed")) is None
    assert active_sd("") is None
