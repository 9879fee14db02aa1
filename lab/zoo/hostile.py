#!/usr/bin/env python3
"""Hostile peripheral: input a gateway must survive.
  advertising  flags + manufacturer data filling the whole 31-byte PDU (company 0xFFFF and
               24 bytes: the most legacy advertising can carry);
  scan resp.   a Complete Local Name holding MQTT wildcard characters, '/', and invalid UTF-8
               (default bytes: b"lab/+#\\xff\\xfe\\xc3\\x28-hostile"); the GAP Device Name
               characteristic holds the same bytes;
  GATT         service HOSTILE_SERVICE with
               failing  readable, but every read fails with ATT error --read-error (default
                        0x80, an application error);
               echo     read/write/notify, starts as invalid UTF-8 (ff fe c3 28), reflects writes.
Events: read_failed {error}, write {char, value}.
"""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bumble import att  # noqa: E402
from bumble.gatt import Characteristic, CharacteristicValue, Service  # noqa: E402
from bumble.profiles.gap import GenericAccessService  # noqa: E402

import common  # noqa: E402
import uuids  # noqa: E402
from common import AD_COMPLETE_NAME, AD_FLAGS, AD_MANUFACTURER, FLAGS_LE_GENERAL_NO_BREDR, ad, emit  # noqa: E402

DEFAULT_NAME = b"lab/+#\xff\xfe\xc3\x28-hostile"
INVALID_UTF8 = b"\xff\xfe\xc3\x28"


def manufacturer_payload() -> bytes:
    # company 0xFFFF (reserved for tests), then 24 bytes: 00 01 02 ... 17
    return (0xFFFF).to_bytes(2, "little") + bytes(range(24))


class Hostile(common.Peripheral):
    def __init__(self, args, **kw):
        self.raw_name = bytes.fromhex(args.name_hex) if args.name_hex else DEFAULT_NAME
        super().__init__(args, name=self.raw_name.decode("utf-8", "replace"))
        self.echo_value = INVALID_UTF8

    def advertising(self):
        adv = ad(AD_FLAGS, bytes([FLAGS_LE_GENERAL_NO_BREDR])) + ad(AD_MANUFACTURER, manufacturer_payload())
        assert len(adv) == common.LEGACY_ADV_MAX, len(adv)
        scan = ad(AD_COMPLETE_NAME, self.raw_name)
        return adv, scan

    def build(self, device):
        for service in device.gatt_server.services:
            if isinstance(service, GenericAccessService):
                service.device_name_characteristic.value = self.raw_name

        error = self.args.read_error

        def failing_read(connection):
            emit("read_failed", error=error)
            raise att.ATT_Error(error)

        def echo_write(connection, value):
            self.echo_value = bytes(value)
            emit("write", char="echo", value=self.echo_value.hex())
            asyncio.get_running_loop().create_task(
                device.notify_subscribers(self.echo, self.echo_value))

        self.failing = Characteristic(
            uuids.HOSTILE_FAILING_READ, Characteristic.Properties.READ,
            Characteristic.READABLE, CharacteristicValue(read=failing_read))
        self.echo = Characteristic(
            uuids.HOSTILE_ECHO,
            Characteristic.Properties.READ | Characteristic.Properties.WRITE
            | Characteristic.Properties.NOTIFY,
            Characteristic.READABLE | Characteristic.WRITEABLE,
            CharacteristicValue(read=lambda connection: self.echo_value, write=echo_write))
        device.add_service(Service(uuids.HOSTILE_SERVICE, [self.failing, self.echo]))


if __name__ == "__main__":
    p = common.base_parser(__doc__.splitlines()[0])
    p.add_argument("--name-hex", default="", help="raw local name bytes, hex")
    p.add_argument("--read-error", type=lambda s: int(s, 0), default=0x80)
    common.main(Hostile, p.parse_args())
