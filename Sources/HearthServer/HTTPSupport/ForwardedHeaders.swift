import Foundation
public import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `::1/128`; a bare address is a /32 or /128).
public struct CIDR: Sendable, Equatable, CustomStringConvertible {
    let network: [UInt8]
    let prefixLength: Int
    public let description: String

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.bytes(of: String(parts[0])) else { return nil }
        let length: Int
        if parts.count == 2 {
            guard let n = Int(parts[1]), (0...(address.count * 8)).contains(n), !parts[1].hasPrefix("+") else { return nil }
            length = n
        } else {
            length = address.count * 8
        }
        network = Self.masked(address, length)
        prefixLength = length
        description = text
    }

    /// Whether an address (text, as a socket reports it) lies in this network. IPv4-mapped
    /// IPv6 addresses (`::ffff:10.0.0.1`) count as their IPv4 address.
    public func contains(_ address: String) -> Bool {
        guard var bytes = Self.bytes(of: address) else { return false }
        if bytes.count == 16, network.count == 4, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
            bytes = Array(bytes[12...])
        }
        return bytes.count == network.count && Self.masked(bytes, prefixLength) == network
    }

    static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = max(0, min(8, length - index * 8))
            return bits == 0 ? 0 : byte & UInt8(truncatingIfNeeded: 0xff << (8 - bits))
        }
    }

    /// The address's bytes (4 or 16), or nil when it is not an IP address.
    static func bytes(of text: String) -> [UInt8]? {
        var t = text
        if t.hasPrefix("["), t.hasSuffix("]") { t = String(t.dropFirst().dropLast()) }
        if let zone = t.firstIndex(of: "%") { t = String(t[..<zone]) }
        if let v4 = try? SocketAddress(ipAddress: t, port: 0) {
            switch v4 {
            case .v4(let a): return withUnsafeBytes(of: a.address.sin_addr) { Array($0) }
            case .v6(let a): return withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
            default: return nil
            }
        }
        return nil
    }
}

/// Who may tell Hearth a request's original scheme and client: `X-Forwarded-Proto` and
/// `X-Forwarded-For` are believed only from a peer in `trustedProxies` (`--trusted-proxy`).
public struct ForwardedPolicy: Sendable {
    public var trustedProxies: [CIDR]
    /// Whether the port itself speaks TLS (the scheme when no trusted proxy says otherwise).
    public var tls: Bool

    public init(trustedProxies: [CIDR] = [], tls: Bool = false) {
        self.trustedProxies = trustedProxies
        self.tls = tls
    }

    func trusts(_ address: String) -> Bool { trustedProxies.contains { $0.contains(address) } }

    /// The scheme and client address a request counts as coming from, given its TCP peer and
    /// the `X-Forwarded-*` values it carries. The client is the right-most `X-Forwarded-For`
    /// entry not itself a trusted proxy (entries to its left could be forged by the client).
    public func resolve(peer: String?, forwardedProto: String?, forwardedFor: [String]) -> (scheme: String, client: String?) {
        let own = tls ? "https" : "http"
        guard let peer, trusts(peer) else { return (own, peer) }
        var scheme = own
        if let proto = forwardedProto?.split(separator: ",").first?.trimmingCharacters(in: .whitespaces).lowercased(),
           proto == "http" || proto == "https"
        {
            scheme = proto
        }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        var client = peer
        for hop in hops.reversed() {
            guard CIDR.bytes(of: hop) != nil else { break }  // garbage: stop at the last address we can vouch for
            client = hop
            if !trusts(hop) { break }
        }
        return (scheme, client)
    }
}

extension HTTPField.Name {
    static let xForwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

/// Rewrites every HTTP/1.1 request's `X-Forwarded-Proto` and `X-Forwarded-For` to what
/// ``ForwardedPolicy`` decides, so the responders read them as facts: the scheme a client used
/// (for the URLs Hearth hands out) and its address (logs, per-address limits). Whatever an
/// untrusted peer sent in those headers is dropped.
final class ForwardedHeadersHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    let policy: ForwardedPolicy

    init(policy: ForwardedPolicy) { self.policy = policy }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        let peer = context.channel.remoteAddress?.ipAddress
        let (scheme, client) = policy.resolve(
            peer: peer, forwardedProto: head.headerFields[.xForwardedProto], forwardedFor: head.headerFields[values: .xForwardedFor])
        head.headerFields[.xForwardedProto] = scheme
        head.headerFields[values: .xForwardedFor] = client.map { [$0] } ?? []
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }
}

/// The values ``ForwardedHeadersHandler`` settled, read back by the responders.
public enum RequestOrigin {
    /// `https` or `http`: how the client reached this server.
    public static func scheme(_ fields: HTTPFields) -> String {
        fields[.xForwardedProto] == "https" ? "https" : "http"
    }

    /// `scheme://authority` for URLs handed back to the client.
    public static func base(_ fields: HTTPFields, authority: String?, fallback: String) -> String {
        "\(scheme(fields))://\(authority ?? fallback)"
    }

    /// The client's address, when known.
    public static func client(_ fields: HTTPFields) -> String? { fields[.xForwardedFor] }
}
