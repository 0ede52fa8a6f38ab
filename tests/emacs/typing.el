;;; typing.el --- Typing eglot has not sent yet never takes a versioned edit  -*- lexical-binding: t; -*-

;; eglot counts versions only when it sends changes, so its "current" version can hide typing the
;; server never saw; an edit planned on the old text then lands on the wrong line.  Two moments:
;; typing before the agent's command (the package sends it first: the server refuses STALE, or
;; plans on the new text after a read), and typing that arrives while the edit is on its way (made
;; deterministic: it is inserted at the very start of the applyEdit handling).

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defun typing--meanwhile (&rest _)
  "Stands for the user's keystroke that arrives while the server's edit is on its way."
  (h-type (h-buffer-of "b.txt") "typed meanwhile\n"))

(h-scenario
 (let ((a (h-open "a.txt"))
       (b (h-open "b.txt")))
   ;; 1. Typed after the agent's read, before its edit.
   (h-observe "a_read" (agent-edit-read '(:path "a.txt")))
   (h-type a "typed before\n")
   (h-observe "a_replace" (agent-edit-replace '(:path "a.txt" :oldText "beta" :newText "BETA")))
   (h-observe "a_text" (h-text a))
   ;; The agent reads again (it was told to): now the edit is planned on what the buffer shows.
   (h-observe "a_reread" (agent-edit-read '(:path "a.txt")))
   (h-observe "a_replace2" (agent-edit-replace '(:path "a.txt" :oldText "beta" :newText "BETA")))
   (h-observe "a_text2" (h-text a))
   ;; 2. Typed while the edit travels: planned on the old text, applied on the new.
   (h-observe "b_read" (agent-edit-read '(:path "b.txt")))
   (advice-add 'agent-edit--apply-edit :before #'typing--meanwhile)
   (h-observe "b_replace" (agent-edit-replace '(:path "b.txt" :oldText "beta" :newText "BETA")))
   (advice-remove 'agent-edit--apply-edit #'typing--meanwhile)
   (h-observe "b_text" (h-text b))))
