#!/usr/bin/env python3
"""Actuator peripheral: a custom 128-bit service (lab/zoo/uuids.py ACTUATOR_*) with
  command  write with response; a value longer than --max-write bytes is refused with ATT error
           0x0D (Invalid Attribute Value Length), the value "fail" with ATT error 0x80
           (application error): gateways must report write errors;
  stream   write without response;
  status   read + notify: UTF-8 JSON reflecting the writes,
           {"command":HEX,"commands":N,"stream":HEX,"streams":N}; notified after every
           accepted write.
Events: write {char, value (hex), response (bool)}, write_refused {char, value, error},
status_read {status}.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bumble import att  # noqa: E402
from bumble.gatt import Characteristic, CharacteristicValue, Service  # noqa: E402

import common  # noqa: E402
import uuids  # noqa: E402
from common import AD_COMPLETE_128, AD_COMPLETE_NAME, AD_FLAGS, FLAGS_LE_GENERAL_NO_BREDR, ad, emit  # noqa: E402


class Actuator(common.Peripheral):
    def __init__(self, args, **kw):
        super().__init__(args, name=args.name)
        self.state = {"command": "", "commands": 0, "stream": "", "streams": 0}

    def advertising(self):
        adv = (ad(AD_FLAGS, bytes([FLAGS_LE_GENERAL_NO_BREDR]))
               + ad(AD_COMPLETE_128, common.uuid128_le(uuids.ACTUATOR_SERVICE)))
        return adv, ad(AD_COMPLETE_NAME, self.args.name.encode())

    def status_bytes(self) -> bytes:
        return json.dumps(self.state, separators=(",", ":")).encode()

    def build(self, device):
        def write_command(connection, value):
            value = bytes(value)
            if len(value) > self.args.max_write:
                emit("write_refused", char="command", value=value.hex(), error=0x0D)
                raise att.ATT_Error(att.ErrorCode.INVALID_ATTRIBUTE_LENGTH)
            if value == b"fail":
                emit("write_refused", char="command", value=value.hex(), error=0x80)
                raise att.ATT_Error(0x80)
            self.state["command"] = value.hex()
            self.state["commands"] += 1
            emit("write", char="command", value=value.hex(), response=True)
            self.changed()

        def write_stream(connection, value):
            value = bytes(value)
            self.state["stream"] = value.hex()
            self.state["streams"] += 1
            emit("write", char="stream", value=value.hex(), response=False)
            self.changed()

        def read_status(connection):
            s = self.status_bytes()
            emit("status_read", status=s.decode())
            return s

        self.command = Characteristic(
            uuids.ACTUATOR_COMMAND, Characteristic.Properties.WRITE,
            Characteristic.WRITEABLE, CharacteristicValue(write=write_command))
        self.stream = Characteristic(
            uuids.ACTUATOR_STREAM, Characteristic.Properties.WRITE_WITHOUT_RESPONSE,
            Characteristic.WRITEABLE, CharacteristicValue(write=write_stream))
        self.status = Characteristic(
            uuids.ACTUATOR_STATUS,
            Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
            Characteristic.READABLE, CharacteristicValue(read=read_status))
        self.status.on("subscription", lambda conn, n, i: emit(
            "subscribed" if n else "unsubscribed", char="status", peer=str(conn.peer_address)))
        device.add_service(Service(uuids.ACTUATOR_SERVICE, [self.command, self.stream, self.status]))

    def changed(self) -> None:
        asyncio.get_running_loop().create_task(
            self.device.notify_subscribers(self.status, self.status_bytes()))


if __name__ == "__main__":
    p = common.base_parser(__doc__.splitlines()[0])
    p.add_argument("--name", default="lab-actuator")
    p.add_argument("--max-write", type=int, default=20)
    common.main(Actuator, p.parse_args())
