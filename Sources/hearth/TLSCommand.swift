import ArgumentParser
import Crypto
import Foundation
import HearthServer
import NIOCore
import SwiftASN1
import X509

/// `hearth admin tls …`: certificates for development and tests.
struct TLSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tls", abstract: "Make TLS certificates for `hearth serve --tls-cert/--tls-key`.", subcommands: [SelfSigned.self])

    struct SelfSigned: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "self-signed",
            abstract: "Write a local certificate authority and a server certificate signed by it.",
            discussion: """
                Writes ca.pem (the CA's certificate: give it to clients as their only trusted root), ca-key.pem, \
                server.pem (the server certificate followed by the CA's) and server-key.pem into --out, keys mode 0600. \
                The server certificate names every --host and always localhost, 127.0.0.1 and ::1. ECDSA P-256 keys, \
                SHA-256 signatures. For development and tests: in production use a certificate from your CA or ACME.
                """)

        @Option(name: .customLong("host"), help: "A DNS name or IP address the server certificate names (repeatable).")
        var hosts: [String] = []

        @Option(help: "The directory to write into (created if missing).")
        var out: String

        @Option(help: "How long the server certificate is valid, in days (the CA: ten years).")
        var days: Int = 397

        @Flag(help: "Replace files that already exist.")
        var force = false

        func validate() throws {
            guard (1...3650).contains(days) else { throw ValidationError("--days must be between 1 and 3650.") }
            for host in hosts where host.isEmpty || host.contains(where: { $0.isWhitespace || $0 == "/" }) {
                throw ValidationError("--host \"\(host)\" is not a host name or IP address.")
            }
        }

        func run() throws {
            let dir = URL(fileURLWithPath: out)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let names = ["ca.pem", "ca-key.pem", "server.pem", "server-key.pem"]
            if !force, let existing = names.first(where: { FileManager.default.fileExists(atPath: dir.appendingPathComponent($0).path) }) {
                throw ValidationError("\(dir.appendingPathComponent(existing).path) exists; --force replaces it.")
            }
            let made = try SelfSignedCertificates.make(hosts: hosts, days: days, now: Date())
            for (name, text, mode) in [
                ("ca.pem", made.caCertificate, 0o644), ("ca-key.pem", made.caKey, 0o600),
                ("server.pem", made.serverCertificate + made.caCertificate, 0o644), ("server-key.pem", made.serverKey, 0o600),
            ] {
                let path = dir.appendingPathComponent(name).path
                try? FileManager.default.removeItem(atPath: path)
                guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
                    throw ValidationError("Cannot write \(path).")
                }
            }
            print("wrote \(dir.path)/{ca.pem,ca-key.pem,server.pem,server-key.pem} for \(made.names.joined(separator: ", "))")
            print("serve:   hearth serve --tls-cert \(dir.appendingPathComponent("server.pem").path) --tls-key \(dir.appendingPathComponent("server-key.pem").path)")
            print("clients: trust \(dir.appendingPathComponent("ca.pem").path) (e.g. curl --cacert, REQUESTS_CA_BUNDLE, AWS_CA_BUNDLE)")
        }
    }
}

/// A CA and a server certificate it signed, as PEM.
struct SelfSignedCertificates {
    var caCertificate: String
    var caKey: String
    var serverCertificate: String
    var serverKey: String
    var names: [String]

    static func make(hosts: [String], days: Int, now: Date) throws -> SelfSignedCertificates {
        let caKey = P256.Signing.PrivateKey()
        let caPublic = Certificate.PublicKey(caKey.publicKey)
        let caName = try DistinguishedName {
            OrganizationName("Hearth (development)")
            CommonName("Hearth local CA")
        }
        let caIdentifier = SubjectKeyIdentifier(hash: caPublic)
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: caPublic,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(3650 * 86400),
            issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                caIdentifier
            },
            issuerPrivateKey: .init(caKey))

        var names: [String] = []
        for name in hosts + ["localhost", "127.0.0.1", "::1"] where !names.contains(name.lowercased()) { names.append(name.lowercased()) }
        let alternativeNames: [GeneralName] = names.map { name in
            if let address = try? SocketAddress(ipAddress: name, port: 0) {
                switch address {
                case .v4(let a): return .ipAddress(ASN1OctetString(contentBytes: withUnsafeBytes(of: a.address.sin_addr) { ArraySlice($0) }))
                case .v6(let a): return .ipAddress(ASN1OctetString(contentBytes: withUnsafeBytes(of: a.address.sin6_addr) { ArraySlice($0) }))
                default: break
                }
            }
            return .dnsName(name)
        }
        let serverKey = P256.Signing.PrivateKey()
        let serverPublic = Certificate.PublicKey(serverKey.publicKey)
        let subject = try DistinguishedName {
            OrganizationName("Hearth (development)")
            CommonName(names[0])
        }
        let server = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: serverPublic,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(TimeInterval(days) * 86400),
            issuer: caName, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(alternativeNames)
                SubjectKeyIdentifier(hash: serverPublic)
                AuthorityKeyIdentifier(keyIdentifier: caIdentifier.keyIdentifier)
            },
            issuerPrivateKey: .init(caKey))
        return SelfSignedCertificates(
            caCertificate: try ca.serializeAsPEM().pemString + "\n", caKey: caKey.pemRepresentation + "\n",
            serverCertificate: try server.serializeAsPEM().pemString + "\n", serverKey: serverKey.pemRepresentation + "\n", names: names)
    }
}
