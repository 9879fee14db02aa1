import Foundation

/// A throw-away PKI made with `openssl` for TLS tests: a CA, a server certificate for
/// 127.0.0.1/localhost and a client certificate, all signed by the CA.
public struct Certificates: Sendable {
  /// Folder holding the PEM files.
  public let directory: String
  /// CA certificate.
  public var caFile: String { directory + "/ca.pem" }
  /// Server certificate and key.
  public var serverCertFile: String { directory + "/server.pem" }
  /// Server private key.
  public var serverKeyFile: String { directory + "/server.key" }
  /// Client certificate.
  public var clientCertFile: String { directory + "/client.pem" }
  /// Client private key.
  public var clientKeyFile: String { directory + "/client.key" }

  /// Whether `openssl` is installed.
  public static var isAvailable: Bool {
    FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")
  }

  /// Generates a fresh CA, server and client certificate (EC P-256 keys: made in a
  /// millisecond, where RSA keys took seconds of the suite's CPU).
  public init() async throws {
    directory = try makeTemporaryDirectory(prefix: "pki").path
    let d = directory
    try await Certificates.openssl([
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-days", "2", "-subj",
      "/CN=gatt2mqtt test CA",
      "-keyout", "\(d)/ca.key", "-out", "\(d)/ca.pem",
    ])
    try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
      toFile: "\(d)/san.ext", atomically: true, encoding: .utf8)
    for (name, subject) in [("server", "/CN=localhost"), ("client", "/CN=gatt2mqtt-client")] {
      try await Certificates.openssl([
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
        subject, "-keyout", "\(d)/\(name).key",
        "-out", "\(d)/\(name).csr",
      ])
      var sign = [
        "x509", "-req", "-in", "\(d)/\(name).csr", "-CA", "\(d)/ca.pem", "-CAkey", "\(d)/ca.key",
        "-CAcreateserial", "-days", "2", "-out", "\(d)/\(name).pem",
      ]
      if name == "server" { sign += ["-extfile", "\(d)/san.ext"] }
      try await Certificates.openssl(sign)
    }
  }

  /// `mosquitto.conf` lines for a TLS listener that requires client certificates.
  public var brokerConfiguration: String {
    """
    allow_anonymous true
    cafile \(caFile)
    certfile \(serverCertFile)
    keyfile \(serverKeyFile)
    require_certificate true
    """
  }

  private static func openssl(_ arguments: [String]) async throws {
    let result = try await runProcess("/usr/bin/openssl", arguments)
    guard result.status == 0 else {
      throw TestFailure("openssl \(arguments.first ?? "") failed: \(result.output)")
    }
  }
}
