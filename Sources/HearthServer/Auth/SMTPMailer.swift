import Foundation
public import HearthCore
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL

/// Sends mail to an SMTP server (RFC 5321): EHLO, STARTTLS or implicit TLS, AUTH PLAIN or
/// LOGIN, MAIL FROM, RCPT TO, DATA with dot-stuffing, QUIT. One connection per message;
/// each reply is awaited and checked, and the whole exchange has a deadline.
public struct SMTPMailer: Sendable {
    public enum Security: String, Sendable {
        /// TLS from the first byte (`smtps://`, usually port 465).
        case tls
        /// STARTTLS when the server offers it, plaintext otherwise (`smtp://`, the default).
        case startTLSIfOffered = "auto"
        /// STARTTLS or fail (`?starttls=require`).
        case startTLS = "require"
        /// Never TLS (`?starttls=never`) — for a relay on loopback.
        case none = "never"
    }

    public var host: String
    public var port: Int
    public var security: Security
    public var username: String?
    public var password: String?
    /// PEM file of extra CA certificates to trust (`?ca=FILE`), besides the system's.
    public var caFile: String?
    /// The envelope and header sender.
    public var from: String
    /// Seconds for the whole exchange of one message.
    public var timeout: Int64 = 30

    public init(host: String, port: Int, security: Security, username: String?, password: String?, caFile: String?, from: String) {
        self.host = host
        self.port = port
        self.security = security
        self.username = username
        self.password = password
        self.caFile = caFile
        self.from = from
    }

    /// Parses `smtp://[user[:password]@]host[:port][?starttls=auto|require|never&ca=FILE]` or
    /// `smtps://…` (implicit TLS). Default ports: 587 for smtp, 465 for smtps.
    public init(url text: String, from: String) throws(HearthError) {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(), scheme == "smtp" || scheme == "smtps",
            let host = url.host, !host.isEmpty
        else {
            throw HearthError(.invalidArgument, "SMTP URL \"\(text)\": expected smtp://[user:password@]host[:port] or smtps://…")
        }
        var security: Security = scheme == "smtps" ? .tls : .startTLSIfOffered
        var caFile: String?
        for item in url.queryItems ?? [] {
            switch item.name {
            case "starttls" where scheme == "smtp":
                guard let s = item.value.flatMap(Security.init(rawValue:)), s != .tls else {
                    throw HearthError(.invalidArgument, "SMTP URL: starttls must be auto, require or never.")
                }
                security = s
            case "ca": caFile = item.value
            default: throw HearthError(.invalidArgument, "SMTP URL: unknown parameter \"\(item.name)\" (known: starttls, ca).")
            }
        }
        self.init(
            host: host, port: url.port ?? (scheme == "smtps" ? 465 : 587), security: security,
            username: url.user?.removingPercentEncoding, password: url.password?.removingPercentEncoding, caFile: caFile, from: from)
    }

    /// `host:port (security)` — for logs; never the credentials.
    public var description: String { "\(host):\(port) (\(security == .tls ? "tls" : "starttls=\(security.rawValue)"))" }

    public struct Message: Sendable {
        public var to: String
        public var subject: String
        public var body: String

        public init(to: String, subject: String, body: String) {
            self.to = to
            self.subject = subject
            self.body = body
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Delivers one message, or throws ``Failure`` saying which step the server refused.
    public func send(_ message: Message) async throws {
        for address in [from, message.to] where address.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "<" || $0 == ">" }) {
            throw Failure(description: "refusing to send: address \(address.debugDescription) contains a line break or angle bracket")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.exchange(message) }
            group.addTask {
                try await Task.sleep(for: .seconds(self.timeout))
                throw Failure(description: "no answer from \(self.host):\(self.port) within \(self.timeout)s")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    func tlsContext() throws -> NIOSSLContext {
        var config = TLSConfiguration.makeClientConfiguration()
        if let caFile { config.additionalTrustRoots = [.file(caFile)] }
        return try NIOSSLContext(configuration: config)
    }

    /// Puts TLS in front of the channel's other handlers (at connect, or after STARTTLS). The
    /// certificate must chain to a trusted root and name the host; a host given as an IP
    /// address cannot be sent as SNI, so for those only the chain is checked.
    static func addTLS(_ channel: any Channel, _ context: NIOSSLContext, host: String) throws {
        let isIP = (try? SocketAddress(ipAddress: host, port: 0)) != nil
        try channel.pipeline.syncOperations.addHandler(
            NIOSSLClientHandler(context: context, serverHostname: isIP ? nil : host), position: .first)
    }

    func exchange(_ message: Message) async throws {
        let implicitTLS = security == .tls
        let tls = implicitTLS ? try tlsContext() : nil
        let host = self.host
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try Self.addTLS(channel, tls, host: host) }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            var lines = inbound.makeAsyncIterator()
            var session = Session(mailer: self, channel: channel.channel, outbound: outbound, encrypted: implicitTLS)
            try await session.run(message, lines: &lines)
        }
    }

    /// One SMTP conversation.
    struct Session {
        let mailer: SMTPMailer
        let channel: any Channel
        let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
        var encrypted: Bool

        /// Reads one (possibly multi-line) reply: its code and its text lines.
        func reply(_ lines: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) async throws -> (Int, [String]) {
            var texts: [String] = []
            while true {
                guard var buffer = try await lines.next() else { throw Failure(description: "the server closed the connection") }
                let line = (buffer.readString(length: buffer.readableBytes) ?? "").trimmingCharacters(in: .newlines)
                let bytes = Array(line.utf8)
                guard bytes.count >= 3, let code = Int(String(decoding: bytes[0..<3], as: UTF8.self)) else {
                    throw Failure(description: "not an SMTP reply: \(line.prefix(80).debugDescription)")
                }
                texts.append(bytes.count > 4 ? String(decoding: bytes[4...], as: UTF8.self) : "")
                if bytes.count == 3 || bytes[3] != UInt8(ascii: "-") { return (code, texts) }
            }
        }

        func command(_ text: String) async throws {
            try await outbound.write(ByteBuffer(string: text + "\r\n"))
        }

        /// Sends `text` and requires a reply in `accepted`; `shown` replaces it in errors (AUTH).
        @discardableResult
        func expect(_ text: String?, _ accepted: ClosedRange<Int>, shown: String? = nil,
                    _ lines: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) async throws -> [String] {
            if let text { try await command(text) }
            let (code, texts) = try await reply(&lines)
            guard accepted.contains(code) else {
                let step = shown ?? text.map { String($0.prefix(40)) } ?? "greeting"
                throw Failure(description: "\(step) → \(code) \(texts.joined(separator: " "))")
            }
            return texts
        }

        mutating func run(_ message: Message, lines: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) async throws {
            try await expect(nil, 220...220, &lines)
            var features = try await expect("EHLO hearth", 250...250, &lines)
            let offersTLS = features.contains { $0.uppercased().hasPrefix("STARTTLS") }
            if !encrypted && (mailer.security == .startTLS || (mailer.security == .startTLSIfOffered && offersTLS)) {
                guard offersTLS else { throw Failure(description: "the server does not offer STARTTLS (starttls=require)") }
                try await expect("STARTTLS", 220...220, &lines)
                let context = try mailer.tlsContext()
                let (channel, host) = (channel, mailer.host)
                try await channel.eventLoop.submit { try SMTPMailer.addTLS(channel, context, host: host) }.get()
                encrypted = true
                features = try await expect("EHLO hearth", 250...250, &lines)
            }
            if let user = mailer.username {
                let password = mailer.password ?? ""
                let mechanisms = features.first { $0.uppercased().hasPrefix("AUTH") }?.uppercased().split(separator: " ").map(String.init) ?? []
                if mechanisms.contains("PLAIN") || !mechanisms.contains("LOGIN") {
                    let token = Data("\u{0}\(user)\u{0}\(password)".utf8).base64EncodedString()
                    try await expect("AUTH PLAIN \(token)", 235...235, shown: "AUTH PLAIN", &lines)
                } else {
                    try await expect("AUTH LOGIN", 334...334, &lines)
                    try await expect(Data(user.utf8).base64EncodedString(), 334...334, shown: "AUTH LOGIN user", &lines)
                    try await expect(Data(password.utf8).base64EncodedString(), 235...235, shown: "AUTH LOGIN password", &lines)
                }
            }
            try await expect("MAIL FROM:<\(mailer.from)>", 250...250, &lines)
            try await expect("RCPT TO:<\(message.to)>", 250...251, &lines)
            try await expect("DATA", 354...354, &lines)
            try await outbound.write(ByteBuffer(string: mailer.render(message)))
            try await expect(".", 250...250, &lines)
            try? await command("QUIT")
        }
    }

    /// The message as sent after DATA: headers, body with CRLF line ends and dot-stuffing,
    /// and the terminating line is sent separately.
    func render(_ message: Message) -> String {
        let date = Self.dateFormatter.string(from: Date())
        var out = [
            "From: \(from)", "To: \(message.to)", "Subject: \(Self.encodedHeader(message.subject))", "Date: \(date)",
            "Message-ID: <\(UUID().uuidString.lowercased())@hearth>", "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 8bit", "",
        ]
        for line in message.body.split(separator: "\n", omittingEmptySubsequences: false) {
            let l = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
            out.append(l.hasPrefix(".") ? "." + l : l)
        }
        return out.joined(separator: "\r\n") + "\r\n"
    }

    /// RFC 2047 encoding for a header that is not plain printable ASCII.
    static func encodedHeader(_ text: String) -> String {
        let clean = text.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        if clean.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return clean }
        return "=?utf-8?B?\(Data(clean.utf8).base64EncodedString())?="
    }

    static let dateFormatter: DateFormatter = {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(secondsFromGMT: 0)
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return f
    }()
}
