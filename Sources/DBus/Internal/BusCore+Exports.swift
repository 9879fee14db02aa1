// The export side of the bus thread: answering method calls for exported objects, the standard
// interfaces, and the ObjectManager signals. Handlers run in tasks of their own; their results
// come back to the bus thread as `.reply` commands.

private let propertiesInterface = "org.freedesktop.DBus.Properties"
private let introspectableInterface = "org.freedesktop.DBus.Introspectable"
private let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"

private func failure(_ code: DBusError.Code, _ message: String) -> DBusError {
  DBusError(code, message)
}

extension BusCore {
  typealias Work = @Sendable () async throws -> [DBusValue]

  func handleMethodCall(_ message: MessagePointer, _ call: IncomingMessage) {
    stats.withLock { $0.incomingCalls += 1 }
    guard let path = call.path, let member = call.member else {
      replyNow(message, call, .failure(failure(.unknownMethod, "method call without member")))
      return
    }
    let isManager = managers.contains(path)
    let object = objects[path] ?? (isManager ? DBusExportedObject(interfaces: []) : nil)
    if member == "Introspect"
      && (call.interface ?? introspectableInterface) == introspectableInterface
    {
      let children = childNames(of: path)
      guard object != nil || !children.isEmpty else {
        replyNow(message, call, .failure(failure(.unknownObject, "no object at \(path)")))
        return
      }
      let xml = Introspection.xml(object: objects[path], isManager: isManager, children: children)
      replyNow(message, call, .success([.string(xml)]))
      return
    }
    guard let object else {
      replyNow(message, call, .failure(failure(.unknownObject, "no object at \(path)")))
      return
    }
    let sender = call.sender
    let arguments = call.arguments
    switch (call.interface, member) {
    case (propertiesInterface, "Get"), (propertiesInterface, "GetAll"),
      (propertiesInterface, "Set"):
      handleProperties(message, call, object, path)
    case (objectManagerInterface, "GetManagedObjects") where isManager:
      let managed = objects.filter { $0.key.isDescendant(of: path) }.sorted { $0.key < $1.key }
      run(message, call) { () async throws -> [DBusValue] in
        var entries: [(DBusValue, DBusValue)] = []
        for (childPath, child) in managed {
          entries.append((.objectPath(childPath), await Self.interfacesValue(child)))
        }
        return [.dictionary(key: "o", value: "a{sa{sv}}", entries)]
      }
    default:
      let candidates = object.interfaces.filter {
        call.interface == nil || $0.name == call.interface
      }
      guard !candidates.isEmpty else {
        replyNow(
          message, call,
          .failure(failure(.unknownInterface, "\(path) has no interface \(call.interface ?? "")")))
        return
      }
      guard
        let (interface, method) = candidates.lazy.compactMap({ i in
          i.methods.first { $0.name == member }.map { (i, $0) }
        }).first
      else {
        replyNow(
          message, call,
          .failure(
            failure(
              .unknownMethod,
              "no method \(member) in \(call.interface ?? "any interface") at \(path)")))
        return
      }
      let received = arguments.map(\.signatureText).joined()
      guard received == method.inSignature.rawValue else {
        replyNow(
          message, call,
          .failure(
            failure(
              .invalidArgs,
              "\(interface.name).\(member) expects '\(method.inSignature)', got '\(received)'")))
        return
      }
      let request = DBusMethodCall(
        sender: sender, path: path, interface: interface.name, member: member,
        arguments: arguments)
      let handler = method.handler
      let expected = method.outSignature
      run(message, call) { () async throws -> [DBusValue] in
        let values = try await handler(request)
        let produced = values.map(\.signatureText).joined()
        guard produced == expected.rawValue else {
          throw DBusError(
            .failed, "\(interface.name).\(member) returned '\(produced)' instead of '\(expected)'")
        }
        for value in values { try value.validate() }
        return values
      }
    }
  }

  private func handleProperties(
    _ message: MessagePointer, _ call: IncomingMessage, _ object: DBusExportedObject,
    _ path: DBusObjectPath
  ) {
    let args = call.arguments
    guard case .string(let interfaceName)? = args.first else {
      replyNow(message, call, .failure(failure(.invalidArgs, "expected an interface name")))
      return
    }
    guard let interface = object.interface(named: interfaceName) else {
      replyNow(
        message, call,
        .failure(failure(.unknownInterface, "\(path) has no interface \(interfaceName)")))
      return
    }
    switch call.member {
    case "GetAll":
      guard args.count == 1 else {
        replyNow(message, call, .failure(failure(.invalidArgs, "GetAll expects 's'")))
        return
      }
      run(message, call) { () async throws -> [DBusValue] in
        [await Self.propertiesValue(interface)]
      }
    case "Get":
      guard args.count == 2, case .string(let name) = args[1] else {
        replyNow(message, call, .failure(failure(.invalidArgs, "Get expects 'ss'")))
        return
      }
      guard let property = interface.properties.first(where: { $0.name == name }) else {
        replyNow(
          message, call,
          .failure(failure(.unknownProperty, "\(interfaceName) has no property \(name)")))
        return
      }
      run(message, call) { () async throws -> [DBusValue] in
        let value = try await property.getter()
        guard value.signature == property.signature else {
          throw DBusError(.failed, "property \(name) has type '\(value.signature)'")
        }
        try value.validate()
        return [.variant(value)]
      }
    default:  // Set
      guard args.count == 3, case .string(let name) = args[1], case .variant(let value) = args[2]
      else {
        replyNow(message, call, .failure(failure(.invalidArgs, "Set expects 'ssv'")))
        return
      }
      guard let property = interface.properties.first(where: { $0.name == name }) else {
        replyNow(
          message, call,
          .failure(failure(.unknownProperty, "\(interfaceName) has no property \(name)")))
        return
      }
      guard let setter = property.setter else {
        replyNow(
          message, call, .failure(failure(.propertyReadOnly, "\(name) is read-only")))
        return
      }
      guard value.signature == property.signature else {
        replyNow(
          message, call,
          .failure(
            failure(
              .invalidArgs, "\(name) has type '\(property.signature)', got '\(value.signature)'")))
        return
      }
      let emits = property.emitsChangedOnSet
      run(message, call) { [self] () async throws -> [DBusValue] in
        try await setter(value)
        if emits {
          send(
            .emit(
              OutgoingSignal(
                path: path, interface: propertiesInterface, member: "PropertiesChanged",
                arguments: [.string(interfaceName), .properties([name: value]), .strings([])]),
              nil))
        }
        return []
      }
    }
  }

  /// `a{sv}` of an interface's readable properties; properties whose getter fails are left out.
  static func propertiesValue(_ interface: DBusInterface) async -> DBusValue {
    var entries: [(DBusValue, DBusValue)] = []
    for property in interface.properties {
      guard let value = try? await property.getter(), value.signature == property.signature,
        (try? value.validate()) != nil
      else { continue }
      entries.append((.string(property.name), .variant(value)))
    }
    return .dictionary(key: "s", value: "v", entries)
  }

  /// `a{sa{sv}}` of an object's interfaces and their properties.
  static func interfacesValue(_ object: DBusExportedObject) async -> DBusValue {
    var entries: [(DBusValue, DBusValue)] = []
    for interface in object.interfaces {
      entries.append((.string(interface.name), await propertiesValue(interface)))
    }
    return .dictionary(key: "s", value: "a{sv}", entries)
  }

  /// Names of the direct children of `path` among exported objects and managers.
  private func childNames(of path: DBusObjectPath) -> [String] {
    var names = Set<String>()
    let prefixLength = path.rawValue == "/" ? 1 : path.rawValue.count + 1
    for other in Array(objects.keys) + Array(managers) where other.isDescendant(of: path) {
      let rest = other.rawValue.dropFirst(prefixLength)
      if let segment = rest.split(separator: "/").first { names.insert(String(segment)) }
    }
    return names.sorted()
  }

  // MARK: replies

  /// Runs `work` in a task and sends its outcome as the reply.
  private func run(_ message: MessagePointer, _ call: IncomingMessage, _ work: @escaping Work) {
    guard incomingCalls.count < Self.maxConcurrentIncomingCalls else {
      stats.withLock { $0.incomingCallsRefused += 1 }
      replyNow(
        message, call,
        .failure(failure(.limitsExceeded, "too many method calls in progress")))
      return
    }
    nextIncomingToken += 1
    let token = nextIncomingToken
    incomingCalls[token] = message
    Task { [self] in
      let result: Result<[DBusValue], DBusError>
      do {
        result = .success(try await work())
      } catch let error as DBusError {
        result = .failure(error)
      } catch {
        result = .failure(DBusError(.failed, "\(error)"))
      }
      send(.reply(token: token, result))
    }
  }

  func sendReply(token: UInt64, _ result: Result<[DBusValue], DBusError>) {
    guard let message = incomingCalls.removeValue(forKey: token) else { return }
    replyNow(message, message.read(), result)
  }

  private func replyNow(
    _ message: MessagePointer, _ call: IncomingMessage, _ result: Result<[DBusValue], DBusError>
  ) {
    guard !call.noReplyExpected else { return }
    do throws(DBusError) {
      switch result {
      case .success(let values):
        let reply = try message.methodReturn()
        do throws(DBusError) {
          try reply.append(values, allowFDs: canPassFDs)
          try send(reply)
        } catch {
          try send(message.errorReply(name: error.name, message: error.message))
        }
      case .failure(let error):
        try send(message.errorReply(name: error.name, message: error.message))
      }
    } catch {
      // Out of memory while answering: the caller will time out.
    }
  }

  // MARK: export and unexport

  func export(
    _ object: DBusExportedObject, at path: DBusObjectPath,
    properties: [String: [String: DBusValue]]
  ) -> Result<Void, DBusError> {
    guard objects[path] == nil else {
      return .failure(failure(.invalidArgument, "an object is already exported at \(path)"))
    }
    objects[path] = object
    if let manager = nearestManager(of: path) {
      let interfaces: [(DBusValue, DBusValue)] = object.interfaces.map { interface in
        (.string(interface.name), .properties(properties[interface.name] ?? [:]))
      }
      _ = try? emit(
        OutgoingSignal(
          path: manager, interface: objectManagerInterface, member: "InterfacesAdded",
          arguments: [.objectPath(path), .dictionary(key: "s", value: "a{sv}", interfaces)]))
    }
    return .success(())
  }

  func unexport(at path: DBusObjectPath) -> Result<Void, DBusError> {
    guard let object = objects.removeValue(forKey: path) else {
      return .failure(failure(.unknownObject, "no object is exported at \(path)"))
    }
    if let manager = nearestManager(of: path) {
      _ = try? emit(
        OutgoingSignal(
          path: manager, interface: objectManagerInterface, member: "InterfacesRemoved",
          arguments: [.objectPath(path), .strings(object.interfaces.map(\.name))]))
    }
    return .success(())
  }

  private func nearestManager(of path: DBusObjectPath) -> DBusObjectPath? {
    managers.filter { path.isDescendant(of: $0) }.max { $0.rawValue.count < $1.rawValue.count }
  }
}
