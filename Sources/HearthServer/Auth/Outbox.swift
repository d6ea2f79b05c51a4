import HearthCore
import HearthAuth
public import Logging
public import Foundation

/// Where the emails of out-of-band codes go. With an SMTP server configured (`--smtp-url`)
/// each is sent there in the background, off the request path; a message the server does not
/// take is logged as an error and kept in the outbox instead. Without one — and for those
/// failures — one JSON file per message under `<data-dir>/outbox/` (written atomically) and a
/// log line. In emulator mode the line carries the link, as the Auth emulator prints it; in
/// production only the file name.
public struct Outbox: Sendable {
    public let directory: URL
    public let smtp: SMTPMailer?
    /// The app's name in the emails (the project id).
    let appName: String
    let logger: Logger

    public init(directory: URL, smtp: SMTPMailer? = nil, appName: String = "Hearth", logger: Logger) {
        self.directory = directory
        self.smtp = smtp
        self.appName = appName
        self.logger = logger
    }

    func deliver(_ code: OOBCode, link: String, emulator: Bool) {
        guard let smtp else { return keep(code, link: link, emulator: emulator) }
        let message = Self.message(code, link: link, appName: appName)
        Task {
            do {
                try await smtp.send(message)
                logger.notice("email sent", metadata: ["to": "\(code.email)", "type": "\(code.requestType.rawValue)", "smtp": "\(smtp.description)"])
            } catch {
                logger.error(
                    "email not sent; kept in the outbox",
                    metadata: ["to": "\(code.email)", "smtp": "\(smtp.description)", "error": "\(error)"])
                keep(code, link: link, emulator: emulator)
            }
        }
    }

    /// Firebase's default templates, in plain text.
    static func message(_ code: OOBCode, link: String, appName: String) -> SMTPMailer.Message {
        let subject: String
        let text: String
        switch code.requestType {
        case .passwordReset:
            subject = "Reset your password for \(appName)"
            text = "Follow this link to reset your \(appName) password for your \(code.email) account.\n\n\(link)\n\nIf you didn't ask to reset your password, you can ignore this email."
        case .verifyEmail:
            subject = "Verify your email for \(appName)"
            text = "Follow this link to verify your email address.\n\n\(link)\n\nIf you didn't ask to verify this address, you can ignore this email."
        case .emailSignIn:
            subject = "Sign in to \(appName) requested at \(code.email)"
            text = "We received a request to sign in to \(appName) using this email address. If you want to sign in with your \(code.email) account, click this link:\n\n\(link)\n\nIf you did not request this link, you can safely ignore this email."
        }
        return SMTPMailer.Message(to: code.email, subject: subject, body: "Hello,\n\n\(text)\n\nThanks,\n\nYour \(appName) team\n")
    }

    /// A phone sign-in code: Hearth sends no SMS, so it always goes to the outbox
    /// (`<time>-sms-<session prefix>.json`: `to`, `requestType: PHONE_SIGN_IN`, `code`,
    /// `sessionInfo`); in emulator mode the log line carries the code, as the Auth emulator prints it.
    func deliver(_ code: PhoneVerificationCode, emulator: Bool) {
        let message = JSON.object([
            ("to", .string(code.phoneNumber)), ("requestType", .string("PHONE_SIGN_IN")), ("code", .string(code.code)),
            ("sessionInfo", .string(code.sessionInfo)), ("createdAt", .number(String(code.createdAt))),
        ])
        var metadata: Logger.Metadata = ["to": "\(code.phoneNumber)", "type": "PHONE_SIGN_IN"]
        if emulator { metadata["code"] = "\(code.code)" }
        write(message, name: "\(code.createdAt)-sms-\(code.sessionInfo.prefix(8)).json", metadata: metadata, what: "verification code")
    }

    /// Writes the message to the outbox directory.
    func keep(_ code: OOBCode, link: String, emulator: Bool) {
        let message = JSON.object([
            ("to", .string(code.email)), ("requestType", .string(code.requestType.rawValue)), ("oobCode", .string(code.code)),
            ("oobLink", .string(link)), ("createdAt", .number(String(code.createdAt))),
        ])
        var metadata: Logger.Metadata = ["to": "\(code.email)", "type": "\(code.requestType.rawValue)"]
        if emulator { metadata["link"] = "\(link)" }
        write(message, name: "\(code.createdAt)-\(code.requestType.mode)-\(code.code.prefix(8)).json", metadata: metadata, what: "email")
    }

    /// One file per message, written atomically (temporary name, then rename).
    func write(_ message: JSON, name: String, metadata: Logger.Metadata, what: String) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let tmp = directory.appendingPathComponent(".\(name).tmp")
            try Data(message.serializedBytes()).write(to: tmp)
            guard rename(tmp.path, directory.appendingPathComponent(name).path) == 0 else {
                throw HearthError(.internal, "rename failed: errno \(errno)")
            }
            var metadata = metadata
            metadata["file"] = "\(name)"
            logger.notice("\(what) queued in the outbox", metadata: metadata)
        } catch {
            logger.error("cannot write to the outbox", metadata: ["path": "\(directory.path)", "error": "\(error)"])
        }
    }
}
