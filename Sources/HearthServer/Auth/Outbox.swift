import HearthCore
import HearthAuth
public import Logging
public import Foundation
public import ServiceLifecycle
import Synchronization

/// Where the emails of out-of-band codes go. With an SMTP server configured (`--smtp-url`)
/// each is sent there off the request path, by ``run()`` — a `Service` of the server's
/// `ServiceGroup`: a request queues the email and answers. A message the server does not take
/// is logged as an error and kept in the outbox instead. Without one — and for those failures —
/// one JSON file per message under `<data-dir>/outbox/` (written atomically) and a log line. In
/// emulator mode the line carries the link, as the Auth emulator prints it; in production only
/// the file name.
///
/// Graceful shutdown: the service stops taking emails (a later one goes to the outbox folder at
/// once), sends those already queued, and returns; what the shutdown deadline cancels is kept in
/// the outbox folder, so no email is lost.
public struct Outbox: Service {
    public let directory: URL
    public let smtp: SMTPMailer?
    /// The app's name in the emails (the project id).
    let appName: String
    let logger: Logger
    /// The emails waiting for ``run()`` (shared by every copy of this value).
    let queue = Queue()

    public init(directory: URL, smtp: SMTPMailer? = nil, appName: String = "Hearth", logger: Logger) {
        self.directory = directory
        self.smtp = smtp
        self.appName = appName
        self.logger = logger
    }

    /// An email waiting for the SMTP server.
    struct Email: Sendable {
        let code: OOBCode
        let link: String
        let emulator: Bool
    }

    /// The emails queued for ``Outbox/run()`` while it runs, by arrival number.
    final class Queue: Sendable {
        struct State {
            /// Set while ``Outbox/run()`` takes emails.
            var arrivals: AsyncStream<Int>.Continuation?
            var waiting: [Int: Email] = [:]
            var next = 0
        }
        let state = Mutex(State())

        /// Opens the queue; `nil` if it is open already (one sender per outbox).
        func open() -> AsyncStream<Int>? {
            let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
            let opened = state.withLock { state in
                guard state.arrivals == nil else { return false }
                state.arrivals = continuation
                return true
            }
            return opened ? stream : nil
        }

        /// Queues an email; false when no sender runs (the caller keeps it in the folder).
        func enqueue(_ email: Email) -> Bool {
            state.withLock { state in
                guard let arrivals = state.arrivals else { return false }
                let number = state.next
                state.next += 1
                state.waiting[number] = email
                arrivals.yield(number)
                return true
            }
        }

        /// Whether ``Outbox/run()`` takes emails now.
        var isOpen: Bool { state.withLock { $0.arrivals != nil } }

        func take(_ number: Int) -> Email? { state.withLock { $0.waiting.removeValue(forKey: number) } }

        /// Takes no more emails; those queued stay to be sent.
        func close() {
            let arrivals = state.withLock { state in
                defer { state.arrivals = nil }
                return state.arrivals
            }
            arrivals?.finish()
        }

        /// Closes the queue and returns what was never sent, in arrival order.
        func drain() -> [Email] {
            close()
            return state.withLock { state in
                defer { state.waiting = [:] }
                return state.waiting.sorted { $0.key < $1.key }.map(\.value)
            }
        }
    }

    /// Sends the queued emails until graceful shutdown (then those already queued), one at a
    /// time. Without an SMTP server there is nothing to send: it waits for the shutdown.
    public func run() async throws {
        guard let smtp else {
            try? await gracefulShutdown()
            return
        }
        guard let arrivals = queue.open() else { throw HearthError(.failedPrecondition, "The outbox is already running.") }
        await withGracefulShutdownHandler {
            for await number in arrivals {
                guard let email = queue.take(number) else { continue }
                await send(email, smtp)
            }
        } onGracefulShutdown: {
            queue.close()
        }
        for email in queue.drain() {
            logger.error("email not sent before shutdown; kept in the outbox", metadata: ["to": "\(email.code.email)", "smtp": "\(smtp.description)"])
            keep(email.code, link: email.link, emulator: email.emulator)
        }
    }

    func deliver(_ code: OOBCode, link: String, emulator: Bool) {
        guard let smtp else { return keep(code, link: link, emulator: emulator) }
        guard queue.enqueue(Email(code: code, link: link, emulator: emulator)) else {
            logger.error("email not sent: the outbox is not running; kept in the outbox", metadata: ["to": "\(code.email)", "smtp": "\(smtp.description)"])
            return keep(code, link: link, emulator: emulator)
        }
    }

    func send(_ email: Email, _ smtp: SMTPMailer) async {
        let code = email.code
        do {
            try await smtp.send(Self.message(code, link: email.link, appName: appName))
            logger.notice("email sent", metadata: ["to": "\(code.email)", "type": "\(code.requestType.rawValue)", "smtp": "\(smtp.description)"])
        } catch {
            logger.error(
                "email not sent; kept in the outbox",
                metadata: ["to": "\(code.email)", "smtp": "\(smtp.description)", "error": "\(error)"])
            keep(code, link: email.link, emulator: email.emulator)
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
