import Foundation
import TetherClient
import TetherProtocol
import TetherTUI

/// The frame around every screen: a titled box (dropped on small terminals), a notice line for
/// the outcome of the user's actions, a line of key hints, and the status bar.
///
/// The status bar shows the current state only: connecting, joining (connected, waiting for the
/// room's state), live, reconnecting (with the reason), not joined (the server refused the room),
/// closed. Transient news ("resynced from a snapshot") disappears after `transientDuration`.
///
/// The notice line says what happened to an action that failed: not sent (pressed while
/// disconnected: it is dropped, not queued, and the notice says so), refused by the server ("✗":
/// not applied), or of unknown outcome ("?": unanswered, or the server lost track of it). It
/// clears on the next action that succeeds, when the connection comes back, or after
/// `noticeDuration`; except "?", which stays until what happened is known (`Unsettled`) and is
/// then replaced by what is known.
@MainActor
final class Shell {
    let root: Stack
    let status = StatusBar()
    let notice = Label("", style: Shell.problemStyle, wraps: true)
    let hintBar = HintBar()
    let screen: any Screen
    let context: ScreenContext
    /// The room's refusal (unknown room, unauthorized...), shown instead of the screen.
    let refusal = Label("", wraps: true)
    var transientDuration: Duration = .seconds(5)
    var noticeDuration: Duration = .seconds(10)

    private let client: TetherClient
    private let frame: Box
    private var connection: ConnectionState
    private var transientInfo: String?
    private var transientGeneration = 0
    private var noticeGeneration = 0
    /// True while the notice is about an action that could not be sent for lack of a connection.
    private var noticeIsAboutTheConnection = false
    /// True while the notice is a "?" waiting to be settled (it does not expire).
    private var noticeWaits = false
    /// The last action whose outcome is unknown, until something tells what became of it.
    private var unsettled: Unsettled?

    /// What will tell the outcome of an unanswered action.
    private struct Unsettled {
        enum Evidence: Equatable {
            /// Its answer, late, on the connection it was sent on (it timed out).
            case lateAnswer
            /// The room's state once the client is back (the connection dropped); `reconnected`
            /// once it is connected again.
            case rejoin(reconnected: Bool)
            /// The room's next version seen, by a patch, snapshot or ack (the server lost track).
            case nextVersion
        }
        let action: SentAction
        var evidence: Evidence
    }

    init(client: TetherClient, context: ScreenContext, inspector: Bool = false) {
        self.client = client
        self.context = context
        connection = client.connectionState.value
        screen = Screens.make(for: context, inspector: inspector)
        let room = context.room
        refusal.isHidden = true
        let content = Stack(.vertical, [screen.body, refusal])
        frame = Box(title: "tether · \(room.name)", padding: 1, content)
        frame.borderlessBelow = Size(width: 50, height: 14)
        notice.isHidden = true
        root = Stack(.vertical, [frame, notice, hintBar, status])
        root.setSize(.fill(), of: frame)
        status.room = room.name
        hintBar.pinned = ["q quit"]

        client.connectionState.bind { [weak self] state in
            guard let self else { return }
            let wasConnected = connection.isConnected
            connection = state
            if case .resynced(let name) = state { showTransient("\(name) resynced from a snapshot") }
            if state.isConnected, !wasConnected, noticeIsAboutTheConnection { clearNotice() }
            followConnection(state)
            updateStatus()
        }.store(in: context.bag)
        let bar = status
        client.lastActionLatency.bind { bar.latency = $0 }.store(in: context.bag)
        room.observeChanges { [weak self, unowned room] _ in
            bar.version = room.version
            self?.roomChanged()
            self?.updateStatus()
        }.store(in: context.bag)
        room.lastError.observe { [weak self] error in
            guard let self, let error else { return }
            if room.isSynced {
                showNotice("✗ " + Output.describe(error))
            }
            updateStatus()
        }.store(in: context.bag)
        context.hints.bind { [weak self] _ in self?.updateHints() }.store(in: context.bag)
        context.onActionResult = { [weak self] action, result in self?.actionFinished(action, result) }
        context.onLateAnswer = { [weak self] action, answer in self?.lateAnswer(action, answer) }
        context.onProblem = { [weak self] problem in self?.showNotice("✗ " + problem) }
    }

    /// Routes keys, focus and handler errors of `application` through the screen, the hints and
    /// the notice line. The application keeps the shell (and so the screen and its bindings) alive.
    func attach(to application: Application) {
        context.application = application
        application.onKey = { key in self.screen.handleKey(key) }
        application.onError = { [weak self] error in self?.showNotice("✗ " + Output.describe(error)) }
        application.onFocusChange = { [weak self] focused in
            // In a text field q is typed, so only Ctrl-C quits there.
            self?.hintBar.pinned = focused?.capturesText == true ? ["Ctrl-C quit"] : ["q quit"]
            self?.screen.focusDidChange(to: focused)
        }
        if let first = screen.initialFocus { application.focus(first) }
    }

    // MARK: Status

    private func updateStatus() {
        let room = context.room
        if let error = room.lastError.value, !room.isSynced {
            status.connection = .custom("not joined", .red)
            status.message = .error(error.code.rawValue)
            refusal.text = error.code == .roomDeleted
                ? "The room \"\(room.name)\" was deleted.\n\n\(error.message)\n\nOpen it again for a new, empty room: tether \(room.name). q quits."
                : "Cannot open the room \"\(room.name)\".\n\n\(error.code.rawValue): \(error.message)\n\n"
                    + "A room is KIND or KIND:INSTANCE. q quits."
            refusal.isHidden = false
            screen.body.isHidden = true
            hintBar.hints = []
            return
        }
        if !refusal.isHidden {
            refusal.isHidden = true
            screen.body.isHidden = false
            updateHints()
        }
        switch connection {
        case .connecting:
            status.connection = .connecting
            status.message = .info("connecting to \(client.options.url)")
        case .live, .resynced:
            if room.isSynced {
                status.connection = .live
                status.message = transientInfo.map { .info($0) }
            } else {
                status.connection = .custom("joining", .yellow)
                status.message = .info("waiting for the room's state")
            }
        case .reconnecting(let attempt, let reason):
            status.connection = .custom("reconnecting (attempt \(attempt))", .magenta)
            status.message = .error(Self.shorten(reason, url: client.options.url))
        case .closed(let reason):
            status.connection = .disconnected
            status.message = .error(reason)
        }
    }

    private func showTransient(_ text: String) {
        transientInfo = text
        transientGeneration += 1
        let generation = transientGeneration
        let duration = transientDuration
        Task { @MainActor [weak self] in
            try? await Task.sleep(for: duration)
            guard let self, self.transientGeneration == generation else { return }
            self.transientInfo = nil
            self.updateStatus()
        }
    }

    /// "cannot connect to URL: connection refused" as "cannot connect: connection refused".
    static func shorten(_ reason: String, url: String) -> String {
        var text = reason
        let bare = url.hasSuffix("/") ? String(url.dropLast()) : url
        for noise in [" to \(url)", " to \(bare)", "\(bare)/: ", "\(url): ", "\(bare): "] {
            text = text.replacingOccurrences(of: noise, with: "")
        }
        return text
    }

    // MARK: Notices

    private func actionFinished(_ action: SentAction, _ result: Result<Int, any Error>) {
        let error: any Error
        switch result {
        case .success(let version):
            if unsettled?.evidence == .nextVersion {
                settle(epoch: context.room.epoch, version: version)
            } else if !noticeWaits {
                clearNotice()  // a "?" stays: this success says nothing about that action
            }
            return
        case .failure(let failure):
            error = failure
        }
        switch error {
        case TetherClientError.notConnected:
            showNotice("✗ \(action.name) was not sent: not connected to the server; press again once live", aboutTheConnection: true)
        case TetherClientError.closed:
            break  // the screen is closing
        case let error as TetherClientError where error.applied == .unknown:
            let evidence: Unsettled.Evidence
            switch error {
            case .timedOut where connection.isConnected: evidence = .lateAnswer
            case .timedOut, .disconnected: evidence = .rejoin(reconnected: false)
            default: evidence = .nextVersion
            }
            unsettled = Unsettled(action: action, evidence: evidence)
            showNotice("? \(action.name): \(Output.describe(error)); it may or may not have been applied", expires: false)
        default:
            showNotice("✗ \(action.name): \(Output.describe(error))")
        }
    }

    /// The answer to an action that had timed out.
    private func lateAnswer(_ action: SentAction, _ answer: Result<Int, TetherClientError>) {
        guard let unsettled, unsettled.action.serial == action.serial else { return }
        switch answer {
        case .success(let version):
            self.unsettled = nil
            showNotice("✓ \(action.name) was applied after all (v\(version))", style: Self.settledStyle)
        case .failure(let error) where error.applied == .unknown:
            self.unsettled?.evidence = .nextVersion
            showNotice("? \(action.name): \(Output.describe(error)); it may or may not have been applied", expires: false)
        case .failure(let error):
            self.unsettled = nil
            showNotice("✗ \(action.name): \(Output.describe(error))")
        }
    }

    /// A dropped connection turns a wait for the late answer into a wait for the room's state
    /// after reconnecting.
    private func followConnection(_ state: ConnectionState) {
        guard let evidence = unsettled?.evidence else { return }
        if !state.isConnected, evidence == .lateAnswer || evidence == .rejoin(reconnected: true) {
            unsettled?.evidence = .rejoin(reconnected: false)
        } else if state.isConnected, evidence == .rejoin(reconnected: false) {
            unsettled?.evidence = .rejoin(reconnected: true)
        }
    }

    private func roomChanged() {
        guard let evidence = unsettled?.evidence, evidence == .nextVersion || evidence == .rejoin(reconnected: true) else { return }
        settle(epoch: context.room.epoch, version: context.room.version)
    }

    /// Says what the room's point `epoch`/`version`, reached after the unsettled action's fate
    /// was sealed, tells about it: nothing changed since it was sent, so it was not applied; or
    /// the room changed, by it or by others, and the screen shows the result.
    private func settle(epoch: String?, version: Int?) {
        guard let action = unsettled?.action else { return }
        unsettled = nil
        let name = action.name
        if let version, epoch != nil, epoch == action.epoch, version == action.version {
            showNotice("✗ \(name) was not applied: the room is still at v\(version); press again if you meant it")
        } else if let version, let sent = action.version, epoch == action.epoch {
            showNotice("? \(name): still unknown whether it was applied; the room changed since (v\(sent) → v\(version)), as shown")
        } else {
            showNotice("? \(name): still unknown whether it was applied; the room is shown as it is now")
        }
    }

    static let problemStyle = Style(fg: .red, bold: true)
    static let settledStyle = Style(fg: .green, bold: true)

    /// Shows `text` on the notice line; it clears after `noticeDuration` unless `expires` is false.
    private func showNotice(_ text: String, style: Style = Shell.problemStyle, aboutTheConnection: Bool = false, expires: Bool = true) {
        notice.text = text
        notice.style = style
        notice.isHidden = false
        noticeIsAboutTheConnection = aboutTheConnection
        noticeWaits = !expires
        noticeGeneration += 1
        guard expires else { return }
        let generation = noticeGeneration
        let duration = noticeDuration
        Task { @MainActor [weak self] in
            try? await Task.sleep(for: duration)
            guard let self, self.noticeGeneration == generation else { return }
            self.clearNotice()
        }
    }

    private func clearNotice() {
        noticeGeneration += 1
        notice.text = ""
        notice.isHidden = true
        noticeIsAboutTheConnection = false
        noticeWaits = false
    }

    // MARK: Hints

    /// The screen's hints, with "Tab focus" when there is more than one thing to focus.
    private func updateHints() {
        var hints = context.hints.value
        if Application.focusableWidgets(in: screen.body).count > 1 { hints.append("Tab focus") }
        hintBar.hints = hints
    }
}
