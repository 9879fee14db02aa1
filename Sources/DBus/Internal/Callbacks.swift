internal import CDBus

// C callbacks registered with libdbus. They run on the bus thread, inside libdbus calls the
// loop makes; they only record what they were told (watches, timeouts, incoming messages) and
// never call back into the connection.

private func core(_ data: UnsafeMutableRawPointer?) -> BusCore? {
  guard let data else { return nil }
  return Unmanaged<BusCore>.fromOpaque(data).takeUnretainedValue()
}

func dbusAddWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
  guard let watch, let core = core(data) else { return 0 }
  core.watches.insert(watch)
  return 1
}

func dbusRemoveWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
  guard let watch, let core = core(data) else { return }
  core.watches.remove(watch)
}

func dbusToggleWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
  // The loop reads each watch's enabled state before every poll.
}

func dbusAddTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
  guard let timeout, let core = core(data) else { return 0 }
  core.timeoutChanged(timeout)
  return 1
}

func dbusRemoveTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
  guard let timeout, let core = core(data) else { return }
  core.timeouts[timeout] = nil
}

func dbusToggleTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
  guard let timeout, let core = core(data) else { return }
  core.timeoutChanged(timeout)
}

func dbusFilter(
  _ connection: OpaquePointer?, _ message: OpaquePointer?, _ data: UnsafeMutableRawPointer?
) -> DBusHandlerResult {
  guard let message, let core = core(data) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
  return core.filter(message) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
}
