;;; replace_sync.el --- A synchronous replace is applied, verified and recorded  -*- lexical-binding: t; -*-

;; The agent (or a person) waits for the answer: Emacs is never idle meanwhile, which is when
;; plain eglot sends its didChange too late and the server called a landed edit "not applied".

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(h-scenario
 (let ((buf (h-open "doc.txt")))
   (h-observe "read" (agent-edit-read '(:path "doc.txt")))
   (h-observe "replace" (agent-edit-replace '(:path "doc.txt" :oldText "beta" :newText "BETA")))
   (h-observe "text" (h-text buf))
   (h-observe "modified" (buffer-modified-p buf))
   (h-observe "history" (agent-edit-execute "history" '(:limit 10)))
   ;; Non-ASCII and astral characters, on a last line without a newline: the edit's end column
   ;; is in the encoding eglot negotiated (it offers utf-32 first).
   ;; The user's save hooks must not rewrite what the agent wrote and the server verified.
   (add-hook 'before-save-hook #'delete-trailing-whitespace)
   (let ((wide (h-open "wide.txt")))
     (h-observe "wide_replace"
                (agent-edit-replace '(:path "wide.txt" :oldText "end" :newText "END")))
     (h-observe "wide_text" (h-text wide)))))
