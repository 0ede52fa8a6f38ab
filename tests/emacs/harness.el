;;; harness.el --- What every Emacs scenario of tests/clients/test_emacs.py shares  -*- lexical-binding: t; -*-

;;; Commentary:

;; A scenario file is loaded by `emacs --batch -Q' in the test's workspace (the current
;; directory, a git repository).  It acts like a user and an agent, records what it observed with
;; `h-observe', and ends with `h-finish', which writes the observations as JSON to
;; $AGENT_EDIT_OUT and exits.  The assertions live in the Python test.
;;
;; Environment: AGENT_EDIT_PYTHON (the Python with agent-edit), AGENT_EDIT_PACKAGE (the folder of
;; agent-edit.el, or empty for plain eglot), AGENT_EDIT_OUT, AGENT_EDIT_SETTINGS (JSON object
;; sent as initializationOptions by plain eglot).

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'json)

(defvar h-observed (make-hash-table :test #'equal) "What the scenario saw, by key.")
(defvar h-root (file-name-as-directory (expand-file-name default-directory)))
(defvar h-package (let ((p (getenv "AGENT_EDIT_PACKAGE"))) (and p (not (string-empty-p p)) p)))
(defvar h-server-command
  (list (getenv "AGENT_EDIT_PYTHON") "-m" "lsp_server" "serve"))

;; Nothing of the test may be written outside the workspace, nor prompt (a prompt in batch reads
;; stdin, which is /dev/null: an error, not an answer).
(setq make-backup-files nil
      auto-save-default nil
      create-lockfiles nil
      vc-handled-backends '(Git)
      eglot-sync-connect 20
      eglot-autoshutdown nil
      use-short-answers t)

(if h-package
    (progn
      (add-to-list 'load-path h-package)
      (require 'agent-edit)
      (setq agent-edit-server-command h-server-command)
      ;; The README's recommendation: agent-edit's edits are checked and verified by the server.
      (add-to-list 'eglot-confirm-server-edits '(agent-edit . nil)))
  ;; Plain eglot, as issue 14 found it: the server for text and program buffers, no package.
  (setq eglot-confirm-server-edits nil)
  (let ((settings (getenv "AGENT_EDIT_SETTINGS")))
    (push (cons '(text-mode prog-mode)
                (append h-server-command
                        (and settings
                             (list :initializationOptions
                                   (json-parse-string settings :object-type 'plist)))))
          eglot-server-programs)))

(defun h-observe (key value)
  "Record VALUE under KEY (a string)."
  (puthash key value h-observed))

(defun h-wait (pred seconds)
  "Let Emacs run (process output, timers) until PRED is true or SECONDS pass; return PRED's value.
A bound, not a delay: it returns as soon as PRED holds."
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    value))

(defun h-server ()
  "The eglot server of the current buffer (or of the workspace)."
  (or (eglot-current-server)
      (car (gethash (eglot--current-project) eglot--servers-by-project))))

(defun h-open (file)
  "Visit FILE (relative to the workspace) and make eglot manage it; return the buffer."
  (let ((buf (find-file-noselect (expand-file-name file h-root))))
    (with-current-buffer buf
      (unless (h-server)
        (apply #'eglot (eglot--guess-contact)))
      (unless (h-wait (lambda () (and eglot--managed-mode (h-server))) 20)
        (error "eglot did not start a server for %s" file)))
    buf))

(defun h-text (buf)
  "The text BUF shows."
  (with-current-buffer buf (buffer-substring-no-properties (point-min) (point-max))))

(defun h-disk (file)
  "FILE's content on disk, or nil when it does not exist."
  (let ((path (expand-file-name file h-root)))
    (when (file-exists-p path)
      (with-temp-buffer
        (insert-file-contents-literally path)
        (decode-coding-region (point-min) (point-max) 'utf-8)
        (buffer-string)))))

(defun h-buffer-of (file)
  "The buffer visiting FILE, or nil."
  (find-buffer-visiting (expand-file-name file h-root)))

(defun h-execute (verb args)
  "agentEdit.VERB with ARGS through eglot's own synchronous request, as plain eglot would."
  (condition-case err
      (jsonrpc-request (h-server) :workspace/executeCommand
                       (list :command (concat "agentEdit." verb)
                             :arguments (vector (or args (make-hash-table))))
                       :timeout 30)
    (jsonrpc-error (list :rpcError (format "%S" (cdr err))))))

(defun h-type (buf text &optional where)
  "Insert TEXT into BUF at WHERE (default: the start), as the user typing would."
  (with-current-buffer buf
    (save-excursion
      (goto-char (or where (point-min)))
      (insert text))))

(defun h--json (value)
  "VALUE (plists, vectors, strings, numbers, t/nil) as JSON text."
  (json-serialize value :null-object nil :false-object :json-false))

(defun h--text-only (s)
  "S with raw bytes (eglot's log may hold some) replaced by ?, so it can be JSON."
  (concat (mapcar (lambda (c) (if (> c #x10ffff) ?? c)) s)))

(defun h-finish ()
  "Write the observations to $AGENT_EDIT_OUT, stop the servers and exit."
  (let ((server (ignore-errors (h-server))))
    (when (and server (not (gethash "events" h-observed)))
      (ignore-errors
        (h-observe "events"
                   (h--text-only
                    (with-current-buffer (jsonrpc-events-buffer server)
                      (buffer-substring-no-properties
                       (max (point-min) (- (point-max) 20000)) (point-max))))))))
  (h-observe "messages" (h--text-only (with-current-buffer (messages-buffer) (buffer-string))))
  (let ((coding-system-for-write 'utf-8-unix)
        (json (condition-case err
                  (h--json h-observed)
                (error (h--json (list :elisp_error (format "observations not JSON: %S" err)))))))
    (with-temp-file (getenv "AGENT_EDIT_OUT")
      (insert json)))
  (ignore-errors (eglot-shutdown-all))
  (kill-emacs 0))

(defmacro h-scenario (&rest body)
  "Run BODY; record a Lisp error with its backtrace instead of dying silently; then finish."
  `(unwind-protect
       (condition-case err
           (progn ,@body)
         (error (h-observe "elisp_error"
                           (format "%S\n%s" err
                                   (with-output-to-string (backtrace))))))
     (h-finish)))

(provide 'harness)
;;; harness.el ends here
