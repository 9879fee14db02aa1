import BridgeCore
import Hummingbird
public import Logging
public import ServiceLifecycle

/// The embedded web server (issue 19, `web.*`): one page, its JSON API and event stream,
/// `/healthz` and `/metrics`, on Hummingbird.
///
/// | path | what |
/// |---|---|
/// | `GET /` | the page (HTML, CSS and JavaScript in the binary, no framework) |
/// | `GET /api/state` | `{"base":…,"gateway":…,"retained":{<topic>:<payload>…},"events":[…]}`: every retained topic the gateway publishes and its recent bridge events |
/// | `GET /api/events` | server-sent events, one `data:` line per publication: `{"topic":…,"retain":…,"payload":…}` |
/// | `POST /api/request` | `{"topic":"<request topic>","payload":…}` handed to the gateway as an MQTT request; answers `{"topic":…,"payload":…}` with the gateway's answer (``WebRequests``) |
/// | `GET /healthz` | `health_check`'s report; 200 when healthy, 503 when not |
/// | `GET /metrics` | Prometheus text format (``GatewayMetrics``) |
///
/// Payloads are JSON when they parse as JSON, text when they are UTF-8, else `{"hex":…}`.
/// With a token (`web.token`) every path but `/healthz` needs `Authorization: Bearer <token>`
/// or `?token=<token>` (an `EventSource` cannot set headers).
public struct WebServer: Service {
  /// The settings.
  public struct Configuration: Sendable {
    /// The address to listen on.
    public var host: String
    /// The port; 0 picks a free one.
    public var port: Int
    /// The token every request must carry, or `nil` for none.
    public var token: String?

    /// Makes the settings.
    ///
    /// - Parameters:
    ///   - host: The address to listen on.
    ///   - port: The port.
    ///   - token: The token, or `nil`.
    public init(host: String = "127.0.0.1", port: Int = 8080, token: String? = nil) {
      self.host = host
      self.port = port
      self.token = token
    }
  }

  /// Largest request body accepted, in bytes.
  public static let maxBodyBytes = 65_536
  /// How long `POST /api/request` waits for the gateway's answer.
  public static let answerTimeout: Duration = .seconds(20)

  let configuration: Configuration
  let backend: any WebBackend
  let hub: WebHub
  let metrics: GatewayMetrics
  let logger: Logger

  /// Makes the server.
  ///
  /// - Parameters:
  ///   - configuration: Where to listen, and the token.
  ///   - backend: The gateway.
  ///   - hub: The gateway's publications.
  ///   - metrics: The gateway's metrics.
  ///   - logger: Where the server logs.
  public init(
    configuration: Configuration, backend: any WebBackend, hub: WebHub, metrics: GatewayMetrics,
    logger: Logger
  ) {
    self.configuration = configuration
    self.backend = backend
    self.hub = hub
    self.metrics = metrics
    self.logger = logger
  }

  /// Serves until graceful shutdown; the event streams end first so that the server can stop.
  public func run() async throws {
    let router = Router()
    router.add(
      middleware: OriginMiddleware(listenHost: configuration.host, token: configuration.token))
    router.add(middleware: TokenMiddleware(token: configuration.token))
    let hub = self.hub
    let backend = self.backend
    let metrics = self.metrics
    let requests = WebRequests(backend: backend, hub: hub)
    router.get("/") { _, _ in
      Response(
        status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
        body: .init(byteBuffer: ByteBuffer(string: WebPage.html)))
    }
    router.get("/api/state") { _, _ in
      Self.json(Self.state(hub: hub, topics: backend.topics))
    }
    router.get("/api/events") { _, _ in
      guard hub.streamCounts.open < WebHub.maxStreams else {
        return Self.error(
          .serviceUnavailable, "busy", "\(WebHub.maxStreams) event streams are open already")
      }
      return Response(
        status: .ok,
        headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
        body: ResponseBody { writer in
          // Opened here, so that a body that never runs leaves no stream behind.
          guard let (id, messages) = hub.open() else {
            try await writer.finish(nil)
            return
          }
          defer { hub.close(id) }
          try await writer.write(ByteBuffer(string: ": gatt2mqtt events\n\n"))
          for await message in messages {
            var line = Array("data: ".utf8)
            line += Self.json(message).serializedBytes()
            line += Array("\n\n".utf8)
            try await writer.write(ByteBuffer(bytes: line))
          }
          try await writer.finish(nil)
        })
    }
    router.post("/api/request") { request, _ in
      // Only JSON: a page on another site can send a "simple" text/plain POST without asking,
      // but not an application/json one (the browser asks first, and this server says no).
      guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true
      else {
        return Self.error(
          .unsupportedMediaType, "invalid_payload", "send the request as application/json")
      }
      var request = request
      let body: ByteBuffer
      do {
        body = try await request.collectBody(upTo: Self.maxBodyBytes)
      } catch {
        return Self.error(
          .contentTooLarge, "payload_too_large", "at most \(Self.maxBodyBytes) bytes")
      }
      do {
        let answer = try await requests.serve(Array(buffer: body), timeout: Self.answerTimeout)
        return Self.json(answer)
      } catch let refusal as WebRequests.Refusal {
        return Self.error(
          refusal.code == "timeout" ? .gatewayTimeout : .badRequest, refusal.code,
          refusal.message)
      }
    }
    router.get("/healthz") { _, _ in
      let health = backend.webHealth()
      return Self.json(
        health, status: health["healthy"]?.boolValue == true ? .ok : .serviceUnavailable)
    }
    router.get("/metrics") { _, _ in
      let devices = hub.retained(backend.topics.bridgeDevices.rawValue).flatMap {
        try? JSONValue.parse($0)
      }
      return Response(
        status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
        body: .init(
          byteBuffer: ByteBuffer(
            bytes: metrics.render(health: backend.webHealth(), devices: devices))))
    }
    let logger = self.logger
    let configuration = self.configuration
    let application = Application(
      router: router,
      configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
      onServerRunning: { channel in
        let port = channel.localAddress?.port ?? configuration.port
        logger.info("web page on http://\(configuration.host):\(port)/")
      },
      logger: logger)
    do {
      try await withGracefulShutdownHandler {
        try await application.run()
      } onGracefulShutdown: {
        hub.finish()
      }
    } catch is CancellationError {
      hub.finish()
    } catch {
      // A port already taken must not stop the gateway: it goes on without its page.
      logger.error(
        "web.listen \(configuration.host):\(configuration.port): \(error); the gateway runs without its web page"
      )
      hub.finish()
      try? await gracefulShutdown()
    }
  }

  /// The snapshot of `GET /api/state`.
  static func state(hub: WebHub, topics: Topics) -> JSONValue {
    let (retained, recent) = hub.snapshot()
    var members = JSONObject()
    for (topic, payload) in retained { members[topic] = payloadJSON(payload) }
    return [
      "base": .string(topics.base), "gateway": .string(topics.gateway.rawValue),
      "retained": .object(members), "events": .array(recent.map { payloadJSON($0.payload) }),
    ]
  }

  /// A payload as JSON: parsed when it is JSON, a string when UTF-8, else `{"hex":…}`.
  static func payloadJSON(_ payload: [UInt8]) -> JSONValue {
    if let value = try? JSONValue.parse(payload) { return value }
    if let text = String(validating: payload, as: UTF8.self) { return .string(text) }
    return ["hex": .string(payload.map { String($0, radix: 16).leftPadded(2) }.joined())]
  }

  static func json(_ message: WebHub.Message) -> JSONValue {
    [
      "topic": .string(message.topic), "retain": .bool(message.retain),
      "payload": payloadJSON(message.payload),
    ]
  }

  static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
    Response(
      status: status, headers: [.contentType: "application/json"],
      body: .init(byteBuffer: ByteBuffer(bytes: value.serializedBytes())))
  }

  static func error(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
    json(["status": "error", "error": .string(code), "message": .string(message)], status: status)
  }
}

/// Refuses requests another site's page makes through the user's browser: a `POST` whose
/// `Origin` is not this server, and, without a token, any request whose `Host` is not a name of
/// this machine or the listen address (a DNS-rebinding page reaches 127.0.0.1 under its own
/// host name). Listening on every address (`0.0.0.0`, `::`) without a token checks no `Host`:
/// the README says to set a token then.
struct OriginMiddleware<Context: RequestContext>: RouterMiddleware {
  let listenHost: String
  let token: String?

  /// Host names (without port) a request to this server may carry; `nil`: any.
  var allowedHosts: Set<String>? {
    guard token == nil, listenHost != "0.0.0.0", listenHost != "::" else { return nil }
    return ["localhost", "127.0.0.1", "::1", "[::1]", listenHost.lowercased(), "[\(listenHost)]"]
  }

  /// The host of a `Host` header or an origin's authority, without the port.
  static func hostName(_ authority: Substring) -> String {
    if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") {
      return String(authority[...end])
    }
    return String(authority.split(separator: ":", maxSplits: 1).first ?? "")
  }

  func handle(
    _ request: Request, context: Context, next: (Request, Context) async throws -> Response
  ) async throws -> Response {
    let host = request.head.authority ?? ""
    if let allowed = allowedHosts, !allowed.contains(Self.hostName(host[...]).lowercased()) {
      return WebServer.error(.forbidden, "forbidden", "unexpected Host '\(host.prefix(64))'")
    }
    if request.method == .post, let origin = request.headers[.origin] {
      let authority = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst()
        .first
      guard let authority, authority.lowercased() == host.lowercased() else {
        return WebServer.error(
          .forbidden, "forbidden", "a request from another site ('\(origin.prefix(64))')")
      }
    }
    return try await next(request, context)
  }
}

/// Refuses requests without the configured token (`/healthz` stays open, for probes).
struct TokenMiddleware<Context: RequestContext>: RouterMiddleware {
  let token: String?

  func handle(
    _ request: Request, context: Context, next: (Request, Context) async throws -> Response
  ) async throws -> Response {
    guard let token, request.uri.path != "/healthz" else { return try await next(request, context) }
    let bearer = request.headers[.authorization].map { Self.same($0, "Bearer \(token)") } ?? false
    let query = request.uri.queryParameters["token"].map { Self.same(String($0), token) } ?? false
    guard bearer || query else {
      return WebServer.error(.unauthorized, "unauthorized", "this gateway's web.token is required")
    }
    return try await next(request, context)
  }

  /// Whether two strings are equal, in a time that does not depend on where they differ (a
  /// token must not be guessable byte by byte from response times).
  static func same(_ a: String, _ b: String) -> Bool {
    let (x, y) = (Array(a.utf8), Array(b.utf8))
    var difference = UInt8(x.count == y.count ? 0 : 1)
    for index in 0..<max(x.count, y.count) {
      difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
    }
    return difference == 0
  }
}

extension String {
  fileprivate func leftPadded(_ width: Int) -> String {
    String(repeating: "0", count: max(0, width - count)) + self
  }
}
