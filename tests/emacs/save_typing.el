;;; save_typing.el --- Typing right after an agent edit is not saved with it  -*- lexical-binding: t; -*-

;; The user types into a clean buffer right after an agent edit lands in it, before eglot sends
;; that typing (its idle timer): the server asks to save the version that showed the edit, and
;; the buffer is at a later one, so it must not be saved (the typing would go to disk with it).

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defun save-typing--type-after (&rest _)
  "The keystroke in one.txt right after the edit is applied."
  (advice-remove 'agent-edit--apply-edit #'save-typing--type-after)
  (h-type (h-buffer-of "one.txt") "typed\n" (with-current-buffer (h-buffer-of "one.txt")
                                               (point-max))))

(h-scenario
 (let ((one (h-open "one.txt")))
   (h-observe "read" (agent-edit-read '(:path "one.txt")))
   (advice-add 'agent-edit--apply-edit :after #'save-typing--type-after)
   (h-observe "result" (agent-edit-replace '(:path "one.txt" :oldText "one" :newText "ONE")))
   (h-observe "buffer" (h-text one))
   (h-observe "disk" (h-disk "one.txt"))))
