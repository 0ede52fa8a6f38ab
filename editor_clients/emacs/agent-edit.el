;;; agent-edit.el --- Checked, verified agent edits through eglot  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "29.1"))
;; Keywords: tools, languages
;; URL: see the agent-edit project's editor_clients/emacs

;;; Commentary:

;; The Emacs client of the agent-edit language server.  agent-edit lets coding agents change files
;; safely through the editor: every edit is checked against what the buffers show now, applied all
;; or nothing, verified afterwards and recorded in a history with undo.  This package only wires
;; the server into eglot; every check, plan and diff happens in the server.
;;
;; What it adds to eglot (see README.md beside this file):
;; - the server program (`agent-edit-server-command') for `eglot-server-programs', and
;;   `M-x agent-edit-start' to start it for the current project;
;; - the two fixes eglot needs for edits the server asks for, scoped to agent-edit's server:
;;   pending typing is sent before eglot checks an edit's version (eglot counts versions only when
;;   it sends changes, so a "current" version could be applied over typing the server never saw),
;;   and the change is sent right after the edit is applied (eglot otherwise sends it from an idle
;;   timer, after the server has given up verifying, and the server reports a false failure);
;; - `M-x agent-edit-history' (the edits as a `diff-mode' buffer), `M-x agent-edit-undo';
;; - handlers for the server's `agentEdit/historyChanged' and `agentEdit/saveDocuments';
;; - gptel tools, one per server command (`agent_edit_read', `agent_edit_replace',
;;   `agent_edit_apply_patch', `agent_edit_write', `agent_edit_history', `agent_edit_undo')
;;   once gptel is loaded, so Emacs agents edit through the same checks;
;; - `agent-edit-read', `agent-edit-replace', `agent-edit-apply-patch': a Lisp API for other agent
;;   packages, returning the server's result plists.
;;
;; Confirmation: eglot asks before applying a server's edit of a file that is not visited
;; (`eglot-confirm-server-edits', default `maybe-summary').  The package passes `agent-edit' as
;; the edit's origin, so the choice can be made for agent-edit alone.  Recommended:
;;
;;   (with-eval-after-load 'eglot
;;     (add-to-list 'eglot-confirm-server-edits '(agent-edit . nil)))
;;
;; because the server already checked the edit against the files, verifies it, records it and can
;; undo it; a prompt per file mostly interrupts the agent.  Keep the prompt if you want to approve
;; each edit of a file you have not opened: a declined edit is answered as not applied (plain
;; eglot answers "applied" even when you say no).

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'project)
(require 'diff-mode)

(defgroup agent-edit nil
  "Checked, verified agent edits through the agent-edit language server."
  :group 'tools
  :prefix "agent-edit-")

(defcustom agent-edit-server-command nil
  "Command that starts the agent-edit language server, a list of strings.
nil means \"agent-edit serve\" when an `agent-edit' executable is on
variable `exec-path', else \"python3 -m lsp_server serve\".  Set it to the
Python of the virtual environment that has agent-edit installed, e.g.
\\='(\"~/proj/.venv/bin/python\" \"-m\" \"lsp_server\" \"serve\")."
  :type '(choice (const :tag "agent-edit serve, else python3 -m lsp_server serve" nil)
                 (repeat :tag "Program and arguments" string)))

(defcustom agent-edit-major-modes '(prog-mode text-mode conf-mode)
  "Major modes whose buffers the agent-edit server manages (and derived modes).
eglot manages each buffer with one server: a mode listed here that has
another server in `eglot-server-programs' keeps that server (the
agent-edit entry is added last), unless you start agent-edit yourself
with `agent-edit-start'."
  :type '(repeat symbol))

(defcustom agent-edit-register-server-program t
  "Whether loading the package adds agent-edit to `eglot-server-programs'.
The entry is appended, so modes that already have a server keep it."
  :type 'boolean)

(defcustom agent-edit-settings nil
  "Server settings sent as initializationOptions, a plist.
For example (:deny [\"secrets/**\"] :maxFileBytes 2000000).  The keys
are the server's (see the agent-edit README); settings only tighten the
server's policy."
  :type '(plist :key-type symbol :value-type sexp))

(defcustom agent-edit-save-after-edit 'clean
  "What to save when the server asks after a verified edit.
The server asks with agentEdit/saveDocuments.  `clean': the buffers
the edit touched that held no unsaved text of yours before it (your
own unsaved text is never written behind your back).  `never':
nothing (and the server is told not to ask)."
  :type '(choice (const :tag "Buffers that were clean before the edit" clean)
                 (const :tag "Never" never)))

(defcustom agent-edit-timeout 30
  "Seconds a synchronous command waits for the server's answer.
The server bounds its own wait for the editor, so this only has to
outlast that."
  :type 'number)

(defcustom agent-edit-gptel-confirm nil
  "Whether gptel asks before running agent-edit's editing tools.
Passed as the tools' :confirm (gptel's `gptel-confirm-tool-calls'
decides when it matters).  The server checks every edit and records
it with undo, so the default is not to ask."
  :type 'boolean)

(defvar agent-edit-history-changed-functions nil
  "Abnormal hook run with the params plist of each agentEdit/historyChanged.
The plist has :editId, :action and :outcome.")

(defconst agent-edit--history-buffer "*agent-edit history*")

;;;; The server

(defclass agent-edit-server (eglot-lsp-server) ()
  :documentation "An eglot connection to the agent-edit language server.
Its own class so that the applyEdit handling, the custom methods and
the two eglot fixes apply to this server only.")

(defun agent-edit-server-command ()
  "The command that starts the server.
`agent-edit-server-command', or the default it describes."
  (or agent-edit-server-command
      (if (executable-find "agent-edit")
          (list "agent-edit" "serve")
        (list "python3" "-m" "lsp_server" "serve"))))

(defun agent-edit--contact (&optional _interactive _project)
  "The `eglot-server-programs' contact of agent-edit: its class and command."
  (cons 'agent-edit-server (agent-edit-server-command)))

(defun agent-edit--language-ids ()
  "One language id per mode of `agent-edit-major-modes'.
The server ignores ids it does not know (it goes by the file name)."
  (mapcar (lambda (m) (replace-regexp-in-string "\\(?:-ts\\)?-mode\\'" "" (symbol-name m)))
          agent-edit-major-modes))

(defun agent-edit--register ()
  "Append agent-edit's entry to `eglot-server-programs' (once)."
  (unless (cl-find-if (lambda (entry) (eq (cdr entry) #'agent-edit--contact))
                      eglot-server-programs)
    (add-to-list 'eglot-server-programs
                 (cons agent-edit-major-modes #'agent-edit--contact) t)))

(when agent-edit-register-server-program
  (agent-edit--register))

;;;###autoload
(defun agent-edit-start ()
  "Start the agent-edit server for the current project with eglot.
Buffers of `agent-edit-major-modes' in the project are then managed by
it.  Unlike \\[eglot], this does not depend on the order of
`eglot-server-programs'."
  (interactive)
  (let ((project (or (project-current)
                     (user-error "agent-edit: %s is in no project (a VC repository)"
                                 default-directory))))
    (eglot agent-edit-major-modes project 'agent-edit-server
           (agent-edit-server-command) (agent-edit--language-ids))))

(cl-defmethod eglot-initialization-options ((_server agent-edit-server))
  "The server's settings: `agent-edit-settings' plus saveAfterEdit."
  (let ((settings (copy-sequence agent-edit-settings)))
    (unless (plist-member settings :saveAfterEdit)
      (setq settings (plist-put settings :saveAfterEdit
                                (if (eq agent-edit-save-after-edit 'never) :json-false t))))
    (or settings (make-hash-table))))

(defun agent-edit--servers ()
  "The running agent-edit servers, newest first."
  (let (out)
    (maphash (lambda (_project servers)
               (dolist (s servers)
                 (when (and (cl-typep s 'agent-edit-server) (jsonrpc-running-p s))
                   (push s out))))
             eglot--servers-by-project)
    out))

(defun agent-edit-current-server (&optional path)
  "The agent-edit server for PATH (a file name), else for the current buffer.
Falls back to the only running agent-edit server; nil if none fits."
  (or (and (not (stringp path))
           (let ((s (eglot-current-server)))
             (and (cl-typep s 'agent-edit-server) (jsonrpc-running-p s) s)))
      (let* ((dir (if (and (stringp path) (file-name-absolute-p path))
                      (file-name-directory (expand-file-name path))
                    default-directory))
             (project (and (file-directory-p dir) (project-current nil dir)))
             (root (and project (file-truename (project-root project)))))
        (and root
             (cl-find-if (lambda (s)
                           (equal (file-truename (project-root (eglot--project s))) root))
                         (agent-edit--servers))))
      (let ((all (agent-edit--servers)))
        (and (= (length all) 1) (car all)))))

;;;; The two eglot fixes (scoped to edits of agent-edit's server)

(defvar agent-edit--applying nil
  "The agent-edit server whose workspace/applyEdit is being applied, else nil.")

(defvar agent-edit--applied nil
  "Buffers that received text edits in the applyEdit being handled.")

(defun agent-edit--flush (&optional buffer)
  "Send BUFFER's pending changes (the current buffer's by default) now.
eglot otherwise sends them from an idle timer, and increases its
version counter only when it does."
  (with-current-buffer (or buffer (current-buffer))
    (when eglot--managed-mode
      ;; Widened: track-changes refuses (an assertion) to hand over a change outside the
      ;; user's narrowing, which an agent edit elsewhere in the file is.  The change would
      ;; then stay unsent and the edit that landed be reported as refused.
      (save-restriction
        (widen)
        (eglot--signal-textDocument/didChange))
      ;; C-x RET f changes how the file will be saved without any change of text.
      (agent-edit--declare-format))))

(defun agent-edit--ours-p ()
  "Whether the current buffer is managed by the server whose edit is applied."
  (and agent-edit--applying
       eglot--managed-mode
       (eq (eglot-current-server) agent-edit--applying)))

(defun agent-edit--around-apply-text-edits (apply edits &optional version &rest rest)
  "Around `eglot--apply-text-edits': APPLY with EDITS, VERSION, REST.
For agent-edit's edits only.  Fix 1: pending typing is sent first, so
eglot's version check compares against the version the buffer really
has.  Fix 2: the change is sent right after the edit, before the
applyEdit answer, so the server can verify it."
  (if (not agent-edit--applying)
      (apply apply edits version rest)
    (let ((ours (agent-edit--ours-p)))
      (when (and ours version) (agent-edit--flush))
      (prog1 (apply apply edits version rest)
        (when edits (cl-pushnew (current-buffer) agent-edit--applied))
        (when ours (agent-edit--flush))))))

(advice-add 'eglot--apply-text-edits :around #'agent-edit--around-apply-text-edits)

;;;; The file's line endings and BOM

(defvar-local agent-edit--format-sent nil
  "The format last declared to the server for this buffer: (EOL . BOM).")

(defun agent-edit--format ()
  "How the current buffer will be saved: (EOL . BOM), each nil when unknown.
Emacs shows a CRLF file with LF and strips a BOM, so the text eglot
sends cannot tell; `buffer-file-coding-system' does."
  (let* ((cs buffer-file-coding-system)
         (type (and cs (coding-system-eol-type cs)))
         (bom (and cs (coding-system-get cs :bom))))
    (cons (pcase type (0 "lf") (1 "crlf") (2 "cr"))
          ;; t: written with a signature; nil: without; a cons (utf-8-auto): as read.
          (cond ((eq bom t) t) ((null bom) :json-false)))))

(defun agent-edit--declare-format (&optional force)
  "Tell the server how the current buffer will be saved (if FORCE or changed).
Only for a buffer an agent-edit server manages."
  (when (and (bound-and-true-p eglot--managed-mode)
             (cl-typep eglot--cached-server 'agent-edit-server))
    (let ((format (agent-edit--format)))
      (when (or force (not (equal format agent-edit--format-sent)))
        (setq agent-edit--format-sent format)
        (jsonrpc-notify eglot--cached-server :agentEdit/documentFormat
                        (append (eglot--TextDocumentIdentifier)
                                (and (car format) (list :eol (car format)))
                                (and (cdr format) (list :bom (cdr format)))))))))

(defun agent-edit--after-did-open (&rest _)
  "After eglot's didOpen: the server knows nothing of this open's format yet."
  (agent-edit--declare-format t))

(advice-add 'eglot--signal-textDocument/didOpen :after #'agent-edit--after-did-open)
;; Saving may change the coding system (the user picks one when the file's cannot hold a char).
(advice-add 'eglot--signal-textDocument/didSave :after #'agent-edit--declare-format)

;;;; File names with a percent sign

(defconst agent-edit--uri-path-allowed-chars
  (let ((chars (copy-sequence (if (boundp 'eglot--uri-path-allowed-chars)
                                  eglot--uri-path-allowed-chars
                                url-path-allowed-chars))))
    (aset chars ?: nil)
    (aset chars ?% nil)
    chars)
  "eglot's characters left as they are in a URI's path, without the percent sign.")

(defvar agent-edit--connecting nil
  "Non-nil while eglot connects an agent-edit server (its root and folders' URIs).")

(defun agent-edit--around-connect (connect managed-modes project class &rest args)
  "Around `eglot--connect': CONNECT with MANAGED-MODES, PROJECT, CLASS and ARGS.
Marks the connection of an agent-edit server, whose workspace URIs
`agent-edit--around-path-to-uri' escapes."
  (let ((agent-edit--connecting
         (and (symbolp class)
              (or (eq class 'agent-edit-server)
                  ;; Never an error of ours in another server's start.
                  (ignore-errors (child-of-class-p class 'agent-edit-server))))))
    (apply connect managed-modes project class args)))

(advice-add 'eglot--connect :around #'agent-edit--around-connect)

(defun agent-edit--around-path-to-uri (path-to-uri path &rest args)
  "Around `eglot-path-to-uri': PATH-TO-URI with PATH and ARGS, percent escaped.
eglot leaves a percent sign of a file name as it is, so the URI of
\"p%20q.txt\" names \"p q.txt\": the server took that buffer for
another file (a read of \"p q.txt\" showed its text), and took the file
itself for one not open, whose edits it writes on the disk under the
buffer's unsaved text; a project folder \"pro%41j\" was \"proAj\" to it.
Only for agent-edit's server: its workspace and the buffers it manages."
  (if (or agent-edit--connecting
          (and (bound-and-true-p eglot--managed-mode)
               (cl-typep eglot--cached-server 'agent-edit-server)))
      (let ((eglot--uri-path-allowed-chars agent-edit--uri-path-allowed-chars))
        (apply path-to-uri path args))
    (apply path-to-uri path args)))

(advice-add (if (or (fboundp 'eglot-path-to-uri) (not (fboundp 'eglot--path-to-uri)))
                'eglot-path-to-uri
              'eglot--path-to-uri)          ; its name before eglot 1.16 (Emacs 29)
            :around #'agent-edit--around-path-to-uri)

;;;; workspace/applyEdit

(defun agent-edit--refuse (format-string &rest args)
  "An ApplyWorkspaceEditResult refusing the edit.
FORMAT-STRING and ARGS make its reason."
  (list :applied :json-false :failureReason (apply #'format format-string args)))

(defun agent-edit--text-edits (wedit)
  "The TextDocumentEdits of WEDIT as a list of (PATH EDITS VERSION)."
  (let (out)
    (seq-doseq (change (plist-get wedit :documentChanges))
      (let ((doc (plist-get change :textDocument)))
        (when doc
          (push (list (eglot-uri-to-path (plist-get doc :uri))
                      (plist-get change :edits)
                      (plist-get doc :version))
                out))))
    (cl-loop for (uri edits) on (plist-get wedit :changes) by #'cddr
             unless (plist-get wedit :documentChanges)
             do (push (list (eglot-uri-to-path uri) edits nil) out))
    (nreverse out)))

(defun agent-edit--check (server prepared)
  "Why PREPARED cannot be applied for SERVER now, or nil.
PREPARED is a list from `agent-edit--text-edits'.  Every file is
checked before any is changed, so a stale file refuses the whole edit
instead of leaving it half applied (eglot applies files one by one and
stops at the first stale one)."
  (cl-loop
   for (path _edits version) in prepared
   for buf = (find-buffer-visiting path)
   thereis
   (cond
    ((and version (null buf))
     (format "%s is not open in Emacs (the server expected version %s)" path version))
    ((and version
          (not (with-current-buffer buf
                 (and eglot--managed-mode (eq (eglot-current-server) server)))))
     (format "%s is not managed by this agent-edit server" path))
    (version
     (with-current-buffer buf
       (agent-edit--flush)             ; fix 1: typing not yet sent counts
       (unless (equal version eglot--versioned-identifier)
         (format "STALE: %s changed in Emacs (version %s, the edit is for version %s)"
                 path eglot--versioned-identifier version))))
    ;; A null version means the server planned from the disk: a buffer showing other text
    ;; would receive the edit at the wrong place.
    ((and buf (buffer-modified-p buf))
     (format "%s has unsaved changes in Emacs that the server has not seen" path))
    ((and buf (not (verify-visited-file-modtime buf)))
     (format "%s changed on disk since Emacs read it (revert the buffer)" path)))))

(defun agent-edit--resource-operation (wedit)
  "The kind of WEDIT's first resource operation (create, rename...), or nil."
  (seq-some (lambda (change) (plist-get change :kind))
            (plist-get wedit :documentChanges)))

(defvar agent-edit--dirty-before (make-hash-table :test #'equal)
  "Files whose buffers held unsaved text before an agent edit touched them.")

(defvar agent-edit--tick-after (make-hash-table :test #'equal)
  "Per file, its buffer's `buffer-chars-modified-tick' right after an agent edit.
A save the server asks for afterwards is of that text only: typing
since then is the user's own unsaved text.")

(defun agent-edit--apply-workspace-edit (wedit)
  "Apply WEDIT with eglot's own function, passing `agent-edit' as its origin."
  (if (get 'eglot-confirm-server-edits 'custom-type)
      (eglot--apply-workspace-edit wedit 'agent-edit)
    ;; eglot < 1.14 (Emacs 29): the second argument is whether to ask.
    (eglot--apply-workspace-edit
     wedit (bound-and-true-p eglot-confirm-server-initiated-edits))))

(defun agent-edit--apply-edit (server wedit)
  "Handle SERVER's workspace/applyEdit of WEDIT.
Returns an ApplyWorkspaceEditResult."
  (let* ((kind (agent-edit--resource-operation wedit))
         (prepared (agent-edit--text-edits wedit))
         (had-buffer (mapcar (lambda (p) (cons (car p) (find-buffer-visiting (car p))))
                             prepared))
         (why (and (not kind) (agent-edit--check server prepared))))
    (cond
     (kind
      ;; eglot would answer "Internal error" half-way; say why instead, before anything.
      (agent-edit--refuse
       "eglot cannot %s files (it advertises no workspaceEdit.resourceOperations); nothing \
was applied" kind))
     (why (agent-edit--refuse "%s; nothing was applied" why))
     (t
      (dolist (p had-buffer)
        (let ((buf (cdr p)))
          (if (and buf (buffer-modified-p buf))
              (puthash (car p) t agent-edit--dirty-before)
            (remhash (car p) agent-edit--dirty-before))))
      (let* ((agent-edit--applying server)
             (agent-edit--applied nil)
             (failed (agent-edit--apply-all-or-nothing wedit had-buffer)))
        (if failed
            (agent-edit--refuse "Emacs could not apply it (%s); nothing was applied" failed)
          (let ((missing (cl-loop for (path edits _v) in prepared
                                  for buf = (find-buffer-visiting path)
                                  when (and (seq-some #'identity edits)
                                            (not (memq buf agent-edit--applied)))
                                  collect path)))
            (dolist (buf agent-edit--applied)
              (when (and (buffer-live-p buf) (buffer-file-name buf))
                (puthash (buffer-file-name buf) (buffer-chars-modified-tick buf)
                         agent-edit--tick-after)))
            (agent-edit--settle-opened had-buffer)
            (if missing
                (agent-edit--refuse
                 "not applied in Emacs (declined, or shown for review, per \
eglot-confirm-server-edits): %s" (string-join missing ", "))
              (list :applied t)))))))))

(defun agent-edit--apply-all-or-nothing (wedit had-buffer)
  "Apply WEDIT; if Emacs fails part-way, put back what landed and say why.
Returns nil when it applied, else the error's message.  HAD-BUFFER maps
each file to the buffer it had before.  eglot applies file by file: an
error at the second file (a read-only buffer, a failing hook) left the
first one changed.  Undone here, every refusal of this package means that
nothing landed, which it tells the server (failureHandling
transactional, see `eglot-client-capabilities' below); the server then
reports such a refusal as one, not as a partial edit."
  (let ((group (cl-loop for buf in (delete-dups (delq nil (mapcar #'cdr had-buffer)))
                        when (buffer-live-p buf)
                        nconc (prepare-change-group buf))))
    (activate-change-group group)
    (condition-case err
        (progn
          (agent-edit--apply-workspace-edit wedit)
          (accept-change-group group)
          nil)
      ((error quit)
       (cancel-change-group group)
       (dolist (buf agent-edit--applied)
         (when (buffer-live-p buf)
           (if (rassq buf had-buffer)
               (agent-edit--flush buf)  ; the server saw the edit land: now it sees it undone
             ;; Opened by eglot for this edit: closed again, unsaved.
             (with-current-buffer buf (set-buffer-modified-p nil))
             (kill-buffer buf))))
       (error-message-string err)))))

(cl-defmethod eglot-client-capabilities ((_server agent-edit-server))
  "eglot's capabilities, with the transactional failure handling this package adds.
Every refusal the package answers comes before any change or after
undoing what landed (`agent-edit--apply-all-or-nothing')."
  (let* ((caps (cl-call-next-method))
         (workspace (plist-get caps :workspace))
         (edit (copy-sequence (plist-get workspace :workspaceEdit))))
    (plist-put caps :workspace
               (plist-put workspace :workspaceEdit
                          (plist-put edit :failureHandling "transactional")))))

(defun agent-edit--save-as-is ()
  "Save the current buffer exactly as it is: the text the server verified.
A save for the server must not change the text: no final newline
added (`require-final-newline'), no `before-save-hook' (whitespace
cleanup, formatters), whose changes no agent saw or asked for.  Nor
its file's encoding: text the file's coding system cannot hold (an
emoji into a Latin-1 file) is not saved, since Emacs would ask for
another coding system in the middle of the agent's edit, or re-encode
every line of the file.  A save that fails or is not made leaves the
buffer modified, and it is then reported as not saved."
  (let ((save-silently t)
        (inhibit-message t)
        (require-final-newline nil)
        (before-save-hook nil))
    (unless (and buffer-file-coding-system
                 (save-restriction
                   (widen)
                   (agent-edit--unencodable-p buffer-file-coding-system)))
      (with-demoted-errors "agent-edit: could not save: %S"
        (save-buffer)))))

(defun agent-edit--unencodable-p (coding)
  "Whether saving the current buffer with CODING would need another coding system.
A CODING of `undecided' (...-unix, ...-dos) is that of a file of ASCII
only, whose coding Emacs could not tell: a save then takes the user's
default coding silently, as the user's own \[save-buffer] does, and the
file's bytes so far stay as they are (ASCII in any ASCII-compatible
coding).  Taken as unencodable, every agent edit bringing a dash, a
quote or an accent into an ASCII file was left unsaved."
  (if (not (eq (coding-system-base coding) 'undecided))
      (unencodable-char-position (point-min) (point-max) coding)
    (not (cl-some (lambda (c)
                    (and c (coding-system-p c)
                         (not (eq (coding-system-base c) 'undecided))
                         (coding-system-get c :ascii-compatible-p)
                         (not (unencodable-char-position (point-min) (point-max) c))))
                  ;; What `select-safe-coding-system' picks without asking, in its order.
                  (list (default-value 'buffer-file-coding-system)
                        (let ((preferred (coding-system-priority-list t)))
                          (and (coding-system-p preferred)
                               (coding-system-get preferred :mime-charset)
                               preferred)))))))

(defvar agent-edit--saved-closed (make-hash-table :test #'equal)
  "Files `agent-edit--settle-opened' saved and closed after an edit.
Their buffers are gone when the server asks to save them: saved already.")

(defun agent-edit--settle-opened (had-buffer)
  "Save and close the buffers eglot opened to edit files that were not open.
HAD-BUFFER maps each edited file to the buffer it had before the edit.
The server planned those edits from the disk, so they belong on the
disk; leaving them in modified buffers nobody opened would hide them."
  (pcase-dolist (`(,path . ,before) had-buffer)
    (let ((buf (find-buffer-visiting path)))
      (when (and buf (not before))
        (with-current-buffer buf
          (when (buffer-modified-p) (agent-edit--save-as-is)))
        (unless (buffer-modified-p buf)
          (puthash path t agent-edit--saved-closed)
          (kill-buffer buf))))))

(cl-defmethod eglot-handle-request
  ((server agent-edit-server) (_method (eql workspace/applyEdit)) &key _label edit)
  "Apply agent-edit's edits after checking every file, and answer truthfully."
  (agent-edit--apply-edit server edit))

;;;; Custom methods of the server

(cl-defmethod eglot-handle-notification
  ((_server agent-edit-server) (_method (eql agentEdit/historyChanged)) &rest params
   &key editId action outcome &allow-other-keys)
  "An edit was recorded: refresh the history view and tell the user."
  (when (and editId (not (equal action "read")))
    (let ((inhibit-message (minibufferp (window-buffer (selected-window)))))
      (message "agent-edit: %s #%s %s" action editId outcome)))
  (let ((buf (get-buffer agent-edit--history-buffer)))
    (when (and buf (get-buffer-window buf t))
      ;; Not from inside the notification: the refresh is a request to the same server.
      (run-at-time 0 nil (lambda ()
                           (when (buffer-live-p buf)
                             (with-current-buffer buf (revert-buffer t t)))))))
  (run-hook-with-args 'agent-edit-history-changed-functions params))

(cl-defmethod eglot-handle-request
  ((_server agent-edit-server) (_method (eql agentEdit/saveDocuments)) &key uris versions
   &allow-other-keys)
  "Save the buffers of URIS that held no unsaved user text before the edit.
VERSIONS gives, at the same index, the version that showed the edit: a
buffer at another one holds typing that came after the edit, and is not
saved.  Typing not sent yet counts (eglot sends it from an idle timer and
counts versions only when it does): it is sent first.
Answers {saved: [uri...]}: the URIs whose file on disk now shows the buffer."
  (let (saved)
    (unless (eq agent-edit-save-after-edit 'never)
      (cl-loop
       for uri across (vconcat uris)
       for i from 0
       for version = (and versions (< i (length versions)) (elt versions i))
       do (let* ((path (eglot-uri-to-path uri))
                 (buf (find-buffer-visiting path)))
            (cond
             ((null buf)
              ;; Closed already: saved if the package closed it after saving it (a file that
              ;; was not open is saved when it is applied); a buffer the user killed since the
              ;; edit may have been killed unsaved, the edit with it.
              (when (and (gethash path agent-edit--saved-closed) (file-exists-p path))
                (push uri saved))
              (remhash path agent-edit--saved-closed))
             ((gethash path agent-edit--dirty-before) nil)
             ;; Typed into since the edit (the request comes after the server verified it).
             ((not (eql (gethash (buffer-file-name buf) agent-edit--tick-after)
                        (buffer-chars-modified-tick buf)))
              nil)
             ;; Not at the version the server names: typing it has heard of, or not yet.
             ((and (numberp version)
                   (with-current-buffer buf
                     (agent-edit--flush)
                     (not (equal version eglot--versioned-identifier))))
              nil)
             (t (with-current-buffer buf
                  (when (buffer-modified-p) (agent-edit--save-as-is))
                  (unless (buffer-modified-p) (push uri saved))))))))
    (list :saved (vconcat (nreverse saved)))))

;;;; Running the server's commands

(defun agent-edit--failure (code message hint &optional details)
  "A failure made by the client, shaped like the server's failures.
CODE, MESSAGE, HINT and DETAILS as in those."
  (list :ok :json-false :code code :message message :hint hint
        :details (or details (make-hash-table)) :committed []))

(defun agent-edit--rpc-failure (err)
  "A failure result from a `jsonrpc-error' ERR (its data) or an error reply."
  (let* ((data (if (and (consp err) (eq (car err) 'jsonrpc-error)) (cdr err) err))
         (message (or (alist-get 'jsonrpc-error-message data)
                      (plist-get data :message)
                      (format "%S" data))))
    (cond
     ((equal message "Timed out")
      (agent-edit--failure
       "TIMEOUT" (format "no answer from the server within %s s" agent-edit-timeout)
       "Read the file again before retrying: the edit may still have been applied."))
     ((equal message "Server died")
      ;; jsonrpc's own error when the process ends with the request unanswered: not an answer,
      ;; and nothing says the edit did not land, so "check the arguments" would mislead.
      (agent-edit--failure
       "NO_SERVER" "the agent-edit server stopped before answering"
       "The edit may have been applied: start the server again (M-x agent-edit-start), then \
read the files and agentEdit.history before retrying."))
     (t
      (agent-edit--failure
       "RPC_ERROR" (format "the server answered with a JSON-RPC error: %s" message)
       "Check the arguments against the command (a malformed argument is InvalidParams)."
       (list :rpcCode (or (alist-get 'jsonrpc-error-code data) (plist-get data :code))))))))

(defun agent-edit--result (result)
  "RESULT when it is a result plist, else a failure saying it was not."
  (if (and (consp result) (plist-member result :ok))
      result
    (agent-edit--failure "RPC_ERROR" "the server answered without a result object"
                         "See the events buffer (M-x eglot-events-buffer).")))

(defun agent-edit--flush-all (server)
  "Send the pending changes of every buffer SERVER manages.
So the server plans on what the buffers show."
  (dolist (buf (eglot--managed-buffers server))
    (when (buffer-live-p buf) (agent-edit--flush buf))))

(defun agent-edit--arguments (args)
  "ARGS (a plist) as a JSON object: nil would go out as null."
  (or args (make-hash-table)))

(defun agent-edit-execute (verb args &optional callback)
  "Run the server's command agentEdit.VERB with ARGS (a plist).
Returns the result plist.  With CALLBACK, return at once and call
CALLBACK with the result later.
The server is the one of ARGS' :path (else of the current buffer).
Failures are result plists too (:ok :json-false :code ...), never
signals, so an agent always gets a reason."
  (let ((server (agent-edit-current-server (plist-get args :path))))
    (if (null server)
        (let ((r (agent-edit--failure
                  "NO_SERVER" "no agent-edit server runs for this project"
                  "Start it with M-x agent-edit-start (or M-x eglot in a file of the project).")))
          (if callback (progn (funcall callback r) nil) r))
      (agent-edit--flush-all server)
      (let ((params (list :command (concat "agentEdit." verb)
                          :arguments (vector (agent-edit--arguments args)))))
        (if callback
            (progn
              (jsonrpc-async-request
               server :workspace/executeCommand params
               :success-fn (lambda (r) (funcall callback (agent-edit--result r)))
               :error-fn (lambda (e) (funcall callback (agent-edit--rpc-failure e)))
               :timeout-fn (lambda ()
                             (funcall callback (agent-edit--rpc-failure
                                                '((jsonrpc-error-message . "Timed out")))))
               :timeout agent-edit-timeout)
              nil)
          (condition-case err
              (agent-edit--result
               (jsonrpc-request server :workspace/executeCommand params
                                :timeout agent-edit-timeout))
            (jsonrpc-error (agent-edit--rpc-failure err))))))))

(defun agent-edit-read (args &optional callback)
  "Run agentEdit.read with ARGS (:path, :startLine, :endLine).
CALLBACK as in `agent-edit-execute'."
  (agent-edit-execute "read" args callback))

(defun agent-edit-replace (args &optional callback)
  "Run agentEdit.replace with ARGS.
ARGS: :path :oldText :newText, optional :replaceAll :expect :dryRun.
CALLBACK as in `agent-edit-execute'."
  (agent-edit-execute "replace" args callback))

(defun agent-edit-apply-patch (args &optional callback)
  "Run agentEdit.applyPatch with ARGS (:patch, a V4A patch; :expect, :dryRun).
CALLBACK as in `agent-edit-execute'."
  (agent-edit-execute "applyPatch" args callback))

(defun agent-edit-ok-p (result)
  "Whether RESULT (a result plist) says ok."
  (eq (plist-get result :ok) t))

(defun agent-edit--describe (result)
  "One line for a person about RESULT."
  (if (agent-edit-ok-p result)
      (format "%s" (or (plist-get result :status) "ok"))
    (format "%s: %s%s" (plist-get result :code) (plist-get result :message)
            (let ((hint (plist-get result :hint)))
              (if (and (stringp hint) (not (string-empty-p hint))) (concat " " hint) "")))))

;;;; History and undo

(defvar-local agent-edit--history-edit-id nil
  "The edit shown in this history buffer, nil for the session's net diff.")

(defun agent-edit--history-refresh (&rest _)
  "Fill the current history buffer from the server.
Its `revert-buffer-function'."
  (let* ((args (and agent-edit--history-edit-id
                    (list :editId agent-edit--history-edit-id)))
         (result (agent-edit-execute "history" (append '(:format "diff") args)))
         (inhibit-read-only t))
    (erase-buffer)
    (if (agent-edit-ok-p result)
        (let ((diff (plist-get result :diff)))
          (insert (if (and (stringp diff) (not (string-empty-p diff)))
                      diff
                    "# No agent edits in this session yet.\n")))
      (insert "# agent-edit: the history could not be read: "
              (agent-edit--describe result) "\n"))
    (goto-char (point-min))
    (set-buffer-modified-p nil)))

;;;###autoload
(defun agent-edit-history (&optional edit-id)
  "Show the agent edits of this session as a `diff-mode' buffer.
Without EDIT-ID, the session's net diff (every file as before the agent
first touched it against now); with a prefix argument, ask for an edit
id and show that edit's diff.  Press g to refresh; the buffer also
refreshes when the server records an edit.  Returns the buffer."
  (interactive (list (and current-prefix-arg (read-number "Agent edit id: "))))
  (let* ((server (or (agent-edit-current-server)
                     (user-error "agent-edit: no server runs for this project (M-x agent-edit-start)")))
         (root (project-root (eglot--project server)))
         (buf (get-buffer-create agent-edit--history-buffer)))
    (with-current-buffer buf
      (diff-mode)
      (setq default-directory root)  ; the diff's a/ b/ paths are relative to the workspace
      (setq agent-edit--history-edit-id edit-id)
      (setq-local revert-buffer-function #'agent-edit--history-refresh)
      (agent-edit--history-refresh)
      (setq buffer-read-only t))
    (when (called-interactively-p 'any) (pop-to-buffer buf))
    buf))

(defun agent-edit--entries (result)
  "The history entries of RESULT, a list."
  (append (plist-get result :entries) nil))

(defun agent-edit--last-undoable ()
  "The newest history entry that can be undone, or nil."
  (let ((history (agent-edit-execute "history" (list :limit 200))))
    (unless (agent-edit-ok-p history)
      (user-error "agent-edit: %s" (agent-edit--describe history)))
    (cl-find-if (lambda (e) (eq (plist-get e :undoable) t))
                (reverse (agent-edit--entries history)))))

(defun agent-edit--entry-files (entry)
  "The file names of history ENTRY."
  (mapcar (lambda (f) (if (consp f) (plist-get f :path) (format "%s" f)))
          (append (plist-get entry :files) nil)))

;;;###autoload
(defun agent-edit-undo (&optional edit-id)
  "Undo an agent edit: EDIT-ID, or else the newest one that can be undone.
The server refuses (CONFLICT) if the lines have changed since the edit.
Interactively, an undo touching more than one file asks first.  With a
prefix argument, ask for the edit id.  Returns the server's result."
  (interactive (list (and current-prefix-arg (read-number "Undo agent edit id: "))))
  (let* ((entry (unless edit-id (agent-edit--last-undoable)))
         (id (or edit-id (and entry (plist-get entry :id))
                 (user-error "agent-edit: no agent edit to undo")))
         (files (and entry (agent-edit--entry-files entry))))
    (when (and (called-interactively-p 'any) (> (length files) 1)
               (not (y-or-n-p (format "Undo agent edit #%s of %d files (%s)? "
                                      id (length files) (string-join files ", ")))))
      (user-error "agent-edit: undo cancelled"))
    (let ((result (agent-edit-execute "undo" (list :editId id))))
      (when (called-interactively-p 'any)
        (message "agent-edit: undo of edit #%s: %s" id (agent-edit--describe result)))
      result)))

;;;; gptel tools

(defun agent-edit--json (result)
  "RESULT as JSON text for a model: the whole result, refusals included."
  (json-serialize result :null-object nil :false-object :json-false))

(defun agent-edit--flag (value)
  "A tool argument VALUE as a JSON boolean.
gptel may hand false as :json-false or :false.  Anything else but t
\(a model's \"false\" or 0) goes out as it is, for the server to
refuse: read as true, it would widen the edit (every occurrence)."
  (cond ((memq value '(nil :json-false :false)) :json-false)
        ((eq value t) t)
        (t value)))

(defun agent-edit--tool-call (callback run)
  "Call RUN with a result callback that hands CALLBACK the result as JSON.
An error in Emacs becomes a failure result too: gptel waits for
CALLBACK, and the model must learn why nothing happened."
  (condition-case err
      (funcall run (lambda (result) (funcall callback (agent-edit--json result))))
    (error
     (funcall callback
              (agent-edit--json
               (agent-edit--failure
                "CLIENT_ERROR" (format "Emacs failed to run the tool: %s"
                                       (error-message-string err))
                "Nothing was sent to the server; check the arguments, or ask the user."))))))

;; One table for every tool: its gptel name, the server command it runs, its
;; description and its arguments.  An argument's :name is the command's
;; argument in snake_case (start_line for startLine); its :type, optional-ness
;; and :enum are the server's contract (tests/clients/test_emacs.py checks them
;; against `python -m lsp_server.contract').
(defconst agent-edit--expect-properties
  '(:version (:type integer :description "Buffer version returned by agent_edit_read")
    :sha256 (:type string :description "sha256 returned by agent_edit_read"))
  "The properties of a precondition: a buffer version or a sha256.")

(defconst agent-edit--gptel-tools
  `(("agent_edit_read" "read" nil
     "Read a file of the workspace as the editor shows it now (unsaved \
changes included). Returns JSON with text, version and sha256; edits are checked \
against what was read. Read a file before editing it."
     ((:name "path" :type string
             :description "File path, relative to the workspace root or absolute")
      (:name "start_line" :type integer :optional t
             :description "First line to read (1-based); the lines are numbered")
      (:name "end_line" :type integer :optional t
             :description "Last line to read (inclusive)")
      (:name "line_numbers" :type boolean :optional t
             :description "Prefix each line with its number and a tab (default: only \
when start_line or end_line is given); never copy these prefixes into old_text")))
    ("agent_edit_replace" "replace" t
     "Replace an exact piece of text in one file, through the editor. old_text \
must match exactly once (else AMBIGUOUS or NO_MATCH with the nearest candidate). The edit is \
refused (STALE) if the file changed since it was read. Returns JSON: ok, status, diff, or \
code/message/hint when refused."
     ((:name "path" :type string :description "File path")
      (:name "old_text" :type string
             :description "The exact text to replace, with enough context to be unique")
      (:name "new_text" :type string :description "The replacement text")
      (:name "replace_all" :type boolean :optional t
             :description "Replace every occurrence")
      (:name "expect" :type object :optional t :properties ,agent-edit--expect-properties
             :description "The version or sha256 the edit was computed from (default: \
this session's last read of the file); refused as STALE if the file shows anything else")
      (:name "dry_run" :type boolean :optional t
             :description "Only check the edit and show its diff; change nothing")
      (:name "match" :type string :optional t :enum ["exact" "lenient"]
             :description "exact (the default): byte for byte; lenient also accepts \
differences in whitespace and Unicode quotes, dashes and spaces (still unique)")))
    ("agent_edit_apply_patch" "applyPatch" t
     "Apply a patch in the V4A format (*** Begin Patch / *** Update File: / \
*** Add File: / *** Delete File: / *** Move to: / @@ hunks / *** End Patch) to one or more \
files, all or nothing: every hunk is checked before anything changes. Returns JSON: ok, \
status, files, diff, or code/message/hint when refused."
     ((:name "patch" :type string :description "The whole V4A patch text")
      (:name "expect" :type object :optional t
             :description "Preconditions per path: {\"path\": {\"version\": N}} or \
{\"path\": {\"sha256\": \"...\"}}; a path not listed is checked against this session's \
last read of it")
      (:name "dry_run" :type boolean :optional t
             :description "Only check the patch and show its diff; change nothing")))
    ("agent_edit_write" "write" t
     "Write the whole content of one file (create it, or replace all of it). \
Refused (STALE) if an existing file changed since it was read. Returns JSON: ok, status, \
diff, or code/message/hint when refused."
     ((:name "path" :type string :description "File path")
      (:name "text" :type string :description "The complete new content of the file")
      (:name "expect" :type object :optional t :properties ,agent-edit--expect-properties
             :description "The version or sha256 the edit was computed from (default: \
this session's last read of the file); refused as STALE if the file shows anything else")
      (:name "dry_run" :type boolean :optional t
             :description "Only check the write and show its diff; change nothing")))
    ("agent_edit_history" "history" nil
     "The agent edits of this session: their ids, files and outcomes, and the net \
change per file (format diff: one unified diff). Returns JSON."
     ((:name "format" :type string :optional t :enum ["json" "diff"]
             :description "json (the default): the entries and the net change per file; \
diff: one unified diff (of edit_id if given, else of the session's net change)")
      (:name "edit_id" :type integer :optional t :description "Only this edit")
      (:name "limit" :type integer :optional t
             :description "At most this many entries, the latest ones (default 200)")
      (:name "texts" :type boolean :optional t
             :description "The whole before and after texts instead of diffs")
      (:name "net_limit" :type integer :optional t
             :description "At most this many files in the net diff (default 200)")))
    ("agent_edit_undo" "undo" t
     "Revert one agent edit by its id, only if the lines it changed are still as it \
left them (else CONFLICT with the lines that differ). Returns JSON: ok, status, diff, or \
code/message/hint when refused."
     ((:name "edit_id" :type integer
             :description "The id of the edit to revert (from agent_edit_history or the \
edit's result)")
      (:name "dry_run" :type boolean :optional t
             :description "Only check the undo and show its diff; change nothing"))))
  "agent-edit's gptel tools: (NAME COMMAND CONFIRM DESCRIPTION ARGS) each.
CONFIRM: the tool changes files, so `agent-edit-gptel-confirm' applies.")

(defun agent-edit--camel (name)
  "The server's name of the snake_case argument NAME (start_line: startLine)."
  (replace-regexp-in-string "_\\([a-z]\\)" (lambda (m) (upcase (substring m 1))) name t t))

(defun agent-edit--gptel-args (specs values)
  "The server's argument plist for VALUES, gptel's values of SPECS in order.
A nil value is an optional argument the model left out; a boolean goes
through `agent-edit--flag', so a false is never taken as true."
  (let (args)
    (cl-loop for spec in specs
             for value in values
             when value
             do (setq args
                      (append args
                              (list (intern (concat ":" (agent-edit--camel
                                                         (plist-get spec :name))))
                                    (if (eq (plist-get spec :type) 'boolean)
                                        (agent-edit--flag value)
                                      value)))))
    args))

(defun agent-edit--gptel-function (command specs)
  "gptel's :function for COMMAND with the arguments SPECS: callback first."
  (lambda (callback &rest values)
    (agent-edit--tool-call
     callback
     (lambda (cb) (agent-edit-execute command (agent-edit--gptel-args specs values) cb)))))

(declare-function gptel-make-tool "gptel" (&rest slots))

(defun agent-edit-gptel-tools ()
  "Define agent-edit's gptel tools with `gptel-make-tool'.
One per server command (`agent-edit--gptel-tools'); their category is
\"agent-edit\"."
  (pcase-dolist (`(,name ,command ,confirm ,description ,specs) agent-edit--gptel-tools)
    (apply #'gptel-make-tool
           :name name
           :function (agent-edit--gptel-function command specs)
           :async t
           :category "agent-edit"
           :description description
           :args specs
           (and confirm (list :confirm agent-edit-gptel-confirm)))))

(with-eval-after-load 'gptel
  (when (fboundp 'gptel-make-tool)
    (agent-edit-gptel-tools)))

(provide 'agent-edit)
;;; agent-edit.el ends here
