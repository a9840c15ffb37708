"""Small candidate configurations for the mocked devices (same shapes dpctl renders)."""

from __future__ import annotations

import json

from controller.drivers.bundle import pack

SONIC_CONFIG_DB = {
    "DEVICE_METADATA": {
        "localhost": {
            "bgp_asn": "65100",
            "docker_routing_config_mode": "split",
            "hostname": "p1-g1-leaf1",
            "hwsku": "CX732Q-N",
            "type": "LeafRouter",
        }
    },
    "PORT": {
        "Ethernet0": {
            "admin_status": "up",
            "alias": "Eth1/1",
            "description": "srv0001:nic1p1",
            "fec": "rs",
            "index": "1",
            "lanes": "0,1,2,3",
            "mtu": "9216",
            "speed": "200000",
        },
        "Ethernet4": {
            "admin_status": "up",
            "alias": "Eth1/2",
            "description": "srv0099:nic1p1",
            "fec": "rs",
            "index": "1",
            "lanes": "4,5,6,7",
            "mtu": "9216",
            "speed": "200000",
        },
    },
    "VLAN": {"Vlan1001": {"vlanid": "1001"}},
    "VLAN_MEMBER": {
        "Vlan1001|Ethernet0": {"tagging_mode": "untagged"},
        "Vlan1001|Ethernet4": {"tagging_mode": "untagged"},
    },
}

SONIC_FRR = """! >>> zebra.conf
frr version 8.5
frr defaults datacenter
hostname p1-g1-leaf1
log syslog informational
no service integrated-vtysh-config
!
ip import-table 100
!
interface Ethernet0
 description srv0001:nic1p1
exit
!
interface Ethernet4
 description srv0002:nic1p1
exit
!
! >>> bgpd.conf
hostname p1-g1-leaf1
!
ip prefix-list PL-LOOPBACK seq 5 permit 10.0.0.5/32
ip prefix-list PL-HOSTS seq 5 permit 10.128.0.0/26 ge 32
!
route-map RM-CONNECTED permit 10
 match ip address prefix-list PL-LOOPBACK
exit
!
route-map RM-HOSTS-IMPORT permit 10
 match ip address prefix-list PL-HOSTS
exit
!
route-map RM-SPINES-OUT permit 10
 match ip address prefix-list PL-LOOPBACK
exit
!
route-map RM-SPINES-OUT permit 20
 match ip address prefix-list PL-HOSTS
exit
!
router bgp 65100
 bgp router-id 10.0.0.5
 bgp bestpath as-path multipath-relax
 bgp graceful-shutdown
 neighbor SPINES peer-group
 neighbor SPINES remote-as external
 neighbor Ethernet128 interface peer-group SPINES
 !
 address-family ipv4 unicast
  redistribute connected route-map RM-CONNECTED
  redistribute table 100 route-map RM-HOSTS-IMPORT
  neighbor SPINES route-map RM-SPINES-OUT out
 exit-address-family
exit
!
end
"""

SONIC_BUNDLE = pack(
    {"config_db.json": json.dumps(SONIC_CONFIG_DB, indent=2) + "\n", "frr.conf": SONIC_FRR}
)

ASTERNOS_CLI = """configure terminal
hostname p1-g1-leaf1
vlan 1001
exit
interface ethernet 0/0
 description srv0001:nic1p1
 mtu 9216
 switchport access vlan 1001
 no shutdown
exit
interface ethernet 0/4
 description srv0002:nic1p1
 mtu 9216
 switchport access vlan 1001
 no shutdown
exit
interface ethernet 0/128
 description p1-spine1:Ethernet0
 mtu 9216
 ipv6 use-link-local-only
 no shutdown
exit
interface loopback 0
 ip address 10.0.0.5/32
exit
interface vlan 1001
 ip address 10.128.0.1/26
 mac-address 02:dc:00:00:00:01
 arp proxy mode anycast_gw
exit
!
ip prefix-list PL-LOOPBACK seq 5 permit 10.0.0.5/32
ip prefix-list PL-HOSTS seq 5 permit 10.128.0.0/26 ge 32
!
route-map RM-SPINES-OUT permit 10
 match ip address prefix-list PL-LOOPBACK
exit
!
route-map RM-SPINES-OUT permit 20
 match ip address prefix-list PL-HOSTS
exit
!
router bgp 65100
 bgp router-id 10.0.0.5
 neighbor SPINES peer-group
 neighbor SPINES remote-as external
 neighbor Ethernet128 interface peer-group SPINES
 !
 address-family ipv4 unicast
  redistribute connected
  neighbor SPINES route-map RM-SPINES-OUT out
  maximum-paths 16
 exit-address-family
exit
!
end
write
"""
