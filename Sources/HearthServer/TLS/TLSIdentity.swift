public import Foundation
public import NIOSSL
import X509

/// `--tls-cert` / `--tls-key`: PEM files, the certificate file holding the server certificate
/// first and any intermediates after it.
public struct TLSFiles: Sendable, Equatable {
    public var certificate: String
    public var key: String

    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}

/// Why a certificate and key were refused (at start-up: a clear message and a nonzero exit;
/// on reload: logged, and the pair in force stays).
public struct TLSLoadError: Error, CustomStringConvertible, Equatable {
    public enum Reason: String, Sendable, Equatable {
        case unreadable
        case noCertificate
        case invalidKey
        case mismatchedPair
        case expired
        case notYetValid
    }

    public let reason: Reason
    public let message: String
    public var description: String { message }

    init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }
}

/// A certificate chain and the private key of its first certificate, checked to belong
/// together and to be valid now.
public struct TLSIdentity: Sendable {
    public let chain: [NIOSSLCertificate]
    public let key: NIOSSLPrivateKey
    /// When the server certificate expires.
    public let notValidAfter: Date

    /// Reads and checks the two files.
    public static func load(_ files: TLSFiles, now: Date = Date()) throws(TLSLoadError) -> TLSIdentity {
        let certificatePEM = try read(files.certificate, "certificate (--tls-cert)")
        let keyPEM = try read(files.key, "private key (--tls-key)")
        return try parse(
            certificatePEM: certificatePEM, keyPEM: keyPEM, certificatePath: files.certificate, keyPath: files.key, now: now)
    }

    static func read(_ path: String, _ what: String) throws(TLSLoadError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "cannot be read (permissions?)" : "does not exist"
            throw TLSLoadError(.unreadable, "The TLS \(what) file \(path) \(why).")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw TLSLoadError(.unreadable, "The TLS \(what) file \(path) is not PEM text.")
        }
        return text
    }

    /// Checks a PEM certificate chain and PEM private key (pure: no files).
    public static func parse(
        certificatePEM: String, keyPEM: String, certificatePath: String = "certificate", keyPath: String = "key", now: Date = Date()
    ) throws(TLSLoadError) -> TLSIdentity {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8))
        } catch {
            throw TLSLoadError(.noCertificate, "\(certificatePath) holds no PEM certificate that can be read (\(error)).")
        }
        guard let leaf = chain.first else {
            throw TLSLoadError(.noCertificate, "\(certificatePath) holds no PEM certificate (-----BEGIN CERTIFICATE-----).")
        }
        guard let keyBlock = pemBlock(in: keyPEM, labelSuffix: "PRIVATE KEY") else {
            throw TLSLoadError(.invalidKey, "\(keyPath) holds no PEM private key (-----BEGIN PRIVATE KEY-----).")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: Array(keyBlock.utf8), format: .pem)
        } catch {
            throw TLSLoadError(.invalidKey, "\(keyPath) is not a readable private key (\(error)); an encrypted key must be decrypted first.")
        }
        // The key must be the certificate's: compare public keys where swift-certificates reads the
        // key type (RSA, P-256/384/521, Ed25519); BoringSSL checks the rest when the context is made.
        if let certificate = try? Certificate(derEncoded: leaf.toDERBytes()),
           let privateKey = try? Certificate.PrivateKey(pemEncoded: keyBlock),
           privateKey.publicKey != certificate.publicKey
        {
            throw TLSLoadError(
                .mismatchedPair, "The private key \(keyPath) does not belong to the certificate \(certificatePath) (their public keys differ).")
        }
        for (index, certificate) in chain.enumerated() {
            let which = index == 0 ? "The certificate" : "Certificate \(index + 1) of the chain"
            let after = Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter))
            let before = Date(timeIntervalSince1970: TimeInterval(certificate.notValidBefore))
            if after < now {
                throw TLSLoadError(.expired, "\(which) in \(certificatePath) expired on \(after.rfc3339Seconds); renew it.")
            }
            if before > now {
                throw TLSLoadError(.notYetValid, "\(which) in \(certificatePath) is not valid before \(before.rfc3339Seconds).")
            }
        }
        let identity = TLSIdentity(chain: chain, key: key, notValidAfter: Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter)))
        do {
            _ = try identity.context(alpn: ["http/1.1"])
        } catch {
            throw TLSLoadError(.mismatchedPair, "The private key \(keyPath) does not fit the certificate \(certificatePath) (\(error)).")
        }
        return identity
    }

    /// The first `-----BEGIN … PRIVATE KEY-----` block (skipping e.g. `EC PARAMETERS` before it).
    static func pemBlock(in text: String, labelSuffix: String) -> String? {
        var rest = Substring(text)
        while let begin = rest.range(of: "-----BEGIN ") {
            guard let labelEnd = rest[begin.upperBound...].range(of: "-----") else { return nil }
            let label = rest[begin.upperBound..<labelEnd.lowerBound]
            let endMarker = "-----END \(label)-----"
            guard let end = rest[labelEnd.upperBound...].range(of: endMarker) else { return nil }
            if label.hasSuffix(labelSuffix) { return String(rest[begin.lowerBound..<end.upperBound]) + "\n" }
            rest = rest[end.upperBound...]
        }
        return nil
    }

    /// A server context offering these protocols by ALPN, TLS 1.2 or later.
    func context(alpn: [String]) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = alpn
        return try NIOSSLContext(configuration: configuration)
    }
}

extension Date {
    fileprivate var rfc3339Seconds: String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: self)
    }
}
