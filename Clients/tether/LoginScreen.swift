import TetherBinding
import TetherJSON
import TetherTUI

/// `login` (per session): email and password fields that send every edit, a sign-in button
/// enabled by the server's `signInEnabled`, its error message, and the signed-in view with a
/// sign-out button. The password text stays in the field; the server learns it only through
/// `setPassword`.
@MainActor
final class LoginScreen: Screen {
    let body: Widget

    init(_ context: ScreenContext) {
        let email = TextField(placeholder: "you@example.com")
        let password = TextField(placeholder: "at least 6 characters", isMasked: true)
        let signIn = Button("Sign in", isEnabled: false)
        let error = Label("", style: Style(fg: .red, bold: true), wraps: true)
        let form = Stack(.vertical, [
            Box(title: "Email", email), Box(title: "Password", password), Stack.row([signIn]), Label(), error,
        ])
        let welcome = Label("", style: Style(fg: .green, bold: true), alignment: .center)
        let signOut = Button("Sign out").onPress(context.action("signOut"))
        let signedIn = Stack(.vertical, spacing: 1, [
            Spacer(.vertical), welcome, Label("(signed in on the server)", alignment: .center), Stack.centeredRow([signOut]), Spacer(.vertical),
        ])

        // Predicted, so the button enables as the fields fill: a burst of typing, Tab and Enter
        // (a paste, a fast typist far from the server) signs in without waiting for the server.
        context.sendEdits(of: email, as: "setEmail", predict: Self.predictEmail)
        context.sendEdits(of: password, as: "setPassword", predict: Self.predictPassword)
        signIn.onPress(context.action("signIn"))

        context.bind("/signInEnabled", as: Bool.self, default: false) { enabled in
            signIn.isEnabled = enabled
            signIn.title = enabled ? "Sign in" : "Sign in (disabled)"  // visible without colors too
        }
        context.bind(context.value("/errorMessage", as: String.self)) { message in
            error.text = message.map { message in Self.english[message].map { "\($0)\n\(message)" } ?? message } ?? ""
        }
        var wasSignedIn = false
        context.bind(combineLatest(context.value("/signedIn", as: Bool.self, default: false), context.value("/email", as: String.self, default: ""))) {
            isSignedIn, address in
            form.isHidden = isSignedIn
            signedIn.isHidden = !isSignedIn
            welcome.text = "Signed in as \(address)"
            if wasSignedIn && !isSignedIn {
                // Signed out: the server forgot the email and password, so does the form.
                email.text = ""
                password.text = ""
            }
            wasSignedIn = isSignedIn
            context.hints.value = isSignedIn
                ? ["Enter signs out"]
                : ["type email, password (6+)", "Enter on Sign in signs in"]
        }
        // The room is private to the connection: after a reconnect the server starts a fresh one,
        // so hand it what is typed again.
        context.room.observeChanges { [unowned context] change in
            guard case .snapshot(_, resynced: true) = change else { return }
            if !email.text.isEmpty { context.perform("setEmail", ["value": .string(email.text)]) }
            if !password.text.isEmpty { context.perform("setPassword", ["value": .string(password.text)]) }
        }.store(in: context.bag)
        body = Stack(.vertical, [form, signedIn])
    }

    /// The server's rule for `setEmail` and `setPassword` (the Login view model in TetherDemos,
    /// which this client does not link): enabled for an e-mail address and a password of at least
    /// 6 characters; `errorMessage` says what a typed field lacks.
    static func predictEmail(_ text: String) -> (inout JSON) -> Void {
        { state in
            state.set("/email", to: .string(text))
            predictRule(&state, email: text, passwordLength: state["passwordLength"]?.intValue ?? 0)
        }
    }

    static func predictPassword(_ text: String) -> (inout JSON) -> Void {
        { state in
            state.set("/passwordLength", to: .int(text.count))
            predictRule(&state, email: state["email"]?.stringValue ?? "", passwordLength: text.count)
        }
    }

    private static func predictRule(_ state: inout JSON, email: String, passwordLength: Int) {
        let emailProblem = !email.isEmpty && !isEmailAddress(email)
        let passwordProblem = passwordLength > 0 && passwordLength < 6
        let message = emailProblem ? emailMessage : passwordProblem ? shortPasswordMessage : nil
        state.set("/errorMessage", to: message.map(JSON.string) ?? .null)
        state.set("/signInEnabled", to: .bool(isEmailAddress(email) && passwordLength >= 6))
    }

    static func isEmailAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !text.contains(where: \.isWhitespace) else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty }
    }

    static let emailMessage = "Enter an e-mail address such as name@example.com."
    static let shortPasswordMessage = "6자리 이상 비밀번호를 입력해주세요."

    /// English for the server's messages that come from the seeds in Korean; shown above them.
    static let english = [shortPasswordMessage: "Please enter a password of at least 6 characters."]
}
