/// Builds `org.freedesktop.DBus.Introspectable` XML.
enum Introspection {
  static let header = """
    <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">

    """

  /// The standard interfaces every exported object answers.
  static let standard = """
     <interface name="org.freedesktop.DBus.Introspectable">
      <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
     </interface>
     <interface name="org.freedesktop.DBus.Peer">
      <method name="Ping"/>
      <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
     </interface>
     <interface name="org.freedesktop.DBus.Properties">
      <method name="Get">
       <arg name="interface_name" type="s" direction="in"/>
       <arg name="property_name" type="s" direction="in"/>
       <arg name="value" type="v" direction="out"/>
      </method>
      <method name="GetAll">
       <arg name="interface_name" type="s" direction="in"/>
       <arg name="props" type="a{sv}" direction="out"/>
      </method>
      <method name="Set">
       <arg name="interface_name" type="s" direction="in"/>
       <arg name="property_name" type="s" direction="in"/>
       <arg name="value" type="v" direction="in"/>
      </method>
      <signal name="PropertiesChanged">
       <arg name="interface_name" type="s"/>
       <arg name="changed_properties" type="a{sv}"/>
       <arg name="invalidated_properties" type="as"/>
      </signal>
     </interface>

    """

  static let objectManager = """
     <interface name="org.freedesktop.DBus.ObjectManager">
      <method name="GetManagedObjects">
       <arg name="objects" type="a{oa{sa{sv}}}" direction="out"/>
      </method>
      <signal name="InterfacesAdded">
       <arg name="object" type="o"/>
       <arg name="interfaces" type="a{sa{sv}}"/>
      </signal>
      <signal name="InterfacesRemoved">
       <arg name="object" type="o"/>
       <arg name="interfaces" type="as"/>
      </signal>
     </interface>

    """

  /// The XML for a node: its interfaces (nil for a path that only has children), whether it is an
  /// object manager, and the names of its direct children.
  static func xml(object: DBusExportedObject?, isManager: Bool, children: [String]) -> String {
    var xml = header + "<node>\n"
    if object != nil || isManager { xml += standard }
    if isManager { xml += objectManager }
    for interface in object?.interfaces ?? [] {
      xml += " <interface name=\"\(escape(interface.name))\">\n"
      for method in interface.methods {
        xml += "  <method name=\"\(escape(method.name))\">\n"
        xml += arguments(method.inSignature, method.inNames, direction: "in")
        xml += arguments(method.outSignature, method.outNames, direction: "out")
        xml += "  </method>\n"
      }
      for signal in interface.signals {
        xml += "  <signal name=\"\(escape(signal.name))\">\n"
        xml += arguments(signal.signature, signal.argumentNames, direction: nil)
        xml += "  </signal>\n"
      }
      for property in interface.properties {
        xml += "  <property name=\"\(escape(property.name))\""
        xml += " type=\"\(escape(property.signature.rawValue))\""
        xml += " access=\"\(property.access)\"/>\n"
      }
      xml += " </interface>\n"
    }
    for child in children { xml += " <node name=\"\(escape(child))\"/>\n" }
    return xml + "</node>\n"
  }

  private static func arguments(
    _ signature: DBusSignature, _ names: [String], direction: String?
  ) -> String {
    var xml = ""
    for (index, type) in signature.completeTypes.enumerated() {
      let name = index < names.count ? names[index] : "arg\(index)"
      xml += "   <arg name=\"\(escape(name))\" type=\"\(escape(type.rawValue))\""
      if let direction { xml += " direction=\"\(direction)\"" }
      xml += "/>\n"
    }
    return xml
  }

  private static func escape(_ text: String) -> String {
    var out = ""
    for c in text {
      switch c {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      default: out.append(c)
      }
    }
    return out
  }
}
