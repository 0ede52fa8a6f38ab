;;; buffer_states.el --- Buffers in states a user leaves them in, then an agent edit  -*- lexical-binding: t; -*-

;; 1. Narrowed: the user narrowed to the end of the file; the agent edits a line before it.
;;    track-changes would not hand over a change outside the narrowing, so the edit landed but
;;    its didChange was never sent: reported CLIENT_REJECTED, "not applied".
;; 2. A file name with a percent sign ("p%20q.txt") open with unsaved typing, next to the file
;;    its name would decode to ("p q.txt"): eglot's URI named the other file, so the server read
;;    the buffer's text as "p q.txt" and wrote "p%20q.txt" on disk, under the unsaved buffer.
;; 3. A two-file patch whose second buffer is read-only: eglot changed the first, then failed
;;    at the second; the server could only call it PARTIAL (rolled back by a second edit) or,
;;    the other way round, UNVERIFIED ("some may have changed") after waiting.
;; 4. The user types into a clean buffer after the agent's edit landed, before the server's
;;    agentEdit/saveDocuments arrives: the typing was saved with the edit, "saved: true".
;; 6. A project folder with a percent sign ("pro%41j", next to "proAj"): the server's workspace
;;    was "proAj", whose a.txt it read instead of the buffer of "pro%41j/a.txt".
;; 7. A CRLF file (Emacs shows it with "\n", buffer-file-coding-system dos) written whole with
;;    CRLF text: the CRs went into the buffer as characters and were saved as CR CR LF.
;; 8. A Latin-1 file, clean, gets an emoji from the agent: the save Emacs made for the server
;;    re-encoded the whole file as UTF-8 in batch (and asks for a coding system in a session).
;; 9. The user kills the edited buffer, unsaved, before the server's save request: the edit is
;;    gone with it, yet the package answered "saved".
;; 10. A file with a carriage return alone mid-line ("x\ry"): LSP ends a line there, eglot does
;;    not, so the server's line 3 was eglot's line 2: an edit landed a line off (PARTIAL) and
;;    the user's typing after it went into the server's copy at the wrong line.
;; 5. The server dies while an edit is on its way (last: it ends the session): the agent was told
;;    "the server answered with a JSON-RPC error ... check the arguments".

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defun buffer-states--whole (buf)
  "BUF's whole text, whatever its narrowing."
  (with-current-buffer buf (save-restriction (widen) (h-text buf))))

(defvar buffer-states--type-before-save nil
  "The buffer the user types into when the server's save request arrives.")

(defvar buffer-states--kill-before-save nil
  "The buffer the user kills, unsaved, when the server's save request arrives.")

(defun buffer-states--killing-before-save (_conn message)
  "Kill `buffer-states--kill-before-save' unsaved as MESSAGE, a save request, arrives."
  (when (and buffer-states--kill-before-save
             (equal (plist-get message :method) "agentEdit/saveDocuments"))
    (with-current-buffer buffer-states--kill-before-save (set-buffer-modified-p nil))
    (kill-buffer buffer-states--kill-before-save)
    (setq buffer-states--kill-before-save nil)))

(defun buffer-states--typing-before-save (_conn message)
  "Type into `buffer-states--type-before-save' as MESSAGE, a save request, arrives."
  (when (and buffer-states--type-before-save
             (equal (plist-get message :method) "agentEdit/saveDocuments"))
    (h-type buffer-states--type-before-save "typed after\n"
            (with-current-buffer buffer-states--type-before-save (point-max)))
    (setq buffer-states--type-before-save nil)))

(h-scenario
 ;; 1. Narrowed to lines 4-5.
 (let ((buf (h-open "narrow.txt")))
   (with-current-buffer buf
     (goto-char (point-min))
     (forward-line 3)
     (narrow-to-region (point) (point-max)))
   (h-observe "narrow_result"
              (agent-edit-replace '(:path "narrow.txt" :oldText "l2\n" :newText "L2\nL2b\n")))
   (h-observe "narrow_text" (buffer-states--whole buf))
   (h-observe "narrow_visible" (h-text buf))
   (h-observe "narrow_read" (agent-edit-read '(:path "narrow.txt"))))
 ;; 2. Percent signs in a file name.
 (let ((buf (h-open "p%20q.txt")))
   (h-type buf "typed\n" (with-current-buffer buf (point-max)))
   (h-observe "space_read" (agent-edit-read '(:path "p q.txt")))
   (h-observe "percent_result"
              (agent-edit-replace '(:path "p%20q.txt" :oldText "percent" :newText "PERCENT")))
   (h-observe "percent_text" (h-text buf))
   (h-observe "percent_disk" (h-disk "p%20q.txt")))
 ;; 3. Read-only second file.
 (let ((one (h-open "one.txt"))
       (two (h-open "two.txt")))
   (with-current-buffer two (setq buffer-read-only t))
   (h-observe "readonly_result"
              (agent-edit-apply-patch
               (list :patch (concat "*** Begin Patch\n*** Update File: one.txt\n@@\n-one\n+ONE\n"
                                    "*** Update File: two.txt\n@@\n-two\n+TWO\n*** End Patch\n"))))
   (h-observe "readonly_one" (h-text one))
   (h-observe "readonly_one_modified" (buffer-modified-p one))
   (h-observe "readonly_two" (h-text two))
   (h-observe "readonly_one_read" (agent-edit-read '(:path "one.txt"))))
 ;; 4. Typing between the edit and the save request.
 (let ((buf (h-open "save.txt")))
   (setq buffer-states--type-before-save buf)
   (advice-add 'jsonrpc-connection-receive :before #'buffer-states--typing-before-save)
   (h-observe "save_result" (agent-edit-replace '(:path "save.txt" :oldText "s1" :newText "S1")))
   (advice-remove 'jsonrpc-connection-receive #'buffer-states--typing-before-save)
   (h-observe "save_typed" (null buffer-states--type-before-save))
   (h-observe "save_text" (h-text buf))
   (h-observe "save_modified" (buffer-modified-p buf))
   (h-observe "save_disk" (h-disk "save.txt")))
 ;; 6. A project of its own in "pro%41j".
 (call-process "git" nil nil nil "init" "-q" (expand-file-name "pro%41j" h-root))
 (let ((buf (h-open "pro%41j/a.txt")))
   (with-current-buffer buf
     (h-observe "folder_read" (agent-edit-read '(:path "a.txt")))
     (h-observe "folder_replace"
                (agent-edit-replace '(:path "a.txt" :oldText "inner" :newText "INNER"))))
   (h-observe "folder_text" (h-text buf))
   (h-observe "folder_decoy" (h-disk "proAj/a.txt")))
 ;; 7. CRLF text written into a CRLF file's buffer.
 (let ((buf (h-open "dos.txt")))
   (h-observe "dos_eol" (coding-system-eol-type (buffer-local-value 'buffer-file-coding-system buf)))
   (agent-edit-read '(:path "dos.txt"))
   (h-observe "dos_write"
              (agent-edit-execute "write" '(:path "dos.txt" :text "ONE\r\ntwo\r\nthree\r\n")))
   (h-observe "dos_text" (h-text buf))
   (h-observe "dos_disk"
              (with-temp-buffer
                (insert-file-contents-literally (expand-file-name "dos.txt" h-root))
                (buffer-string))))
 ;; 8. An emoji into a Latin-1 file.
 (let ((coding-system-for-write 'iso-latin-1-unix))
   (write-region "caf\u00e9\nend\n" nil (expand-file-name "latin1.txt" h-root)))
 (let ((buf (let ((coding-system-for-read 'iso-latin-1-unix))
              (h-open "latin1.txt"))))
   (h-observe "latin1_result"
              (agent-edit-replace '(:path "latin1.txt" :oldText "end" :newText "end \U0001F600")))
   (h-observe "latin1_modified" (buffer-modified-p buf))
   (h-observe "latin1_disk"
              (with-temp-buffer
                (set-buffer-multibyte nil)
                (insert-file-contents-literally (expand-file-name "latin1.txt" h-root))
                (mapconcat (lambda (byte) (format "%02x" byte)) (buffer-string) ""))))
 ;; 9. Killed unsaved before the save request.
 (setq buffer-states--kill-before-save (h-open "killed.txt"))
 (advice-add 'jsonrpc-connection-receive :before #'buffer-states--killing-before-save)
 (h-observe "killed_result" (agent-edit-replace '(:path "killed.txt" :oldText "k1" :newText "K1")))
 (advice-remove 'jsonrpc-connection-receive #'buffer-states--killing-before-save)
 (h-observe "killed_killed" (null buffer-states--kill-before-save))
 (h-observe "killed_disk" (h-disk "killed.txt"))
 ;; 10. A lone CR.
 (let ((buf (h-open "cr.txt")))
   (h-observe "cr_result" (agent-edit-replace '(:path "cr.txt" :oldText "z2" :newText "Z2")))
   (h-observe "cr_text" (h-text buf))
   (h-type buf "typed\n" (with-current-buffer buf (point-max)))
   (h-observe "cr_read" (agent-edit-read '(:path "cr.txt"))))
 ;; 5. The server is killed when its applyEdit arrives, the agent waiting asynchronously.
 (let ((buf (h-open "died.txt"))
       (kill (lambda (server &rest _) (signal-process (jsonrpc--process server) 'SIGKILL)))
       result)
   (advice-add 'agent-edit--apply-edit :before kill)
   (agent-edit-replace '(:path "died.txt" :oldText "d1" :newText "D1")
                       (lambda (r) (setq result r)))
   (h-observe "died_result" (h-wait (lambda () result) 30))
   (advice-remove 'agent-edit--apply-edit kill)
   (h-observe "died_text" (h-text buf))))
