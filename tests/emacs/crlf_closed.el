;;; crlf_closed.el --- A CRLF file edited in Emacs, then closed: the agent goes on from the disk  -*- lexical-binding: t; -*-

;; Emacs shows a CRLF file with LF, so what the agent read and edited there (the LF text, its
;; sha256) reaches the server in another shape than the file on disk once the buffer is closed.
;; The next edit was refused STALE ("changed since it was read") over an untouched file, and
;; undoing the edit was a CONFLICT whose expected and current lines read the same.  The reverse
;; too: an edit made on disk while the file was not open could not be undone in its buffer.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defun crlf-disk (file)
  "FILE's bytes on disk as text, CRs kept (`h-disk' decodes CRLF as LF)."
  (with-temp-buffer
    (insert-file-contents-literally (expand-file-name file h-root))
    (decode-coding-region (point-min) (point-max) 'utf-8-unix)
    (buffer-string)))

(h-scenario
 (let ((buf (h-open "crlf.txt")))
   (h-observe "coding" (symbol-name (buffer-local-value 'buffer-file-coding-system buf)))
   (h-observe "read" (agent-edit-read '(:path "crlf.txt")))
   (h-observe "edit" (agent-edit-replace '(:path "crlf.txt" :oldText "two" :newText "TWO")))
   (h-wait (lambda () (not (buffer-modified-p buf))) 5)
   (h-observe "disk_after_edit" (crlf-disk "crlf.txt"))
   (kill-buffer buf))
 ;; The buffer is gone: the server reads the CRLF file from the disk now.
 (h-wait (lambda () nil) 0.3)
 (with-current-buffer (h-open "other.txt")
   (h-observe "edit_closed"
              (agent-edit-replace '(:path "crlf.txt" :oldText "three" :newText "THREE")))
   (h-observe "disk_after_edit_closed" (crlf-disk "crlf.txt"))
   (h-observe "history_closed" (agent-edit-execute "history" '(:format "json")))
   (h-observe "undo_closed" (agent-edit-undo 1))
   (h-observe "disk_after_undo_closed" (crlf-disk "crlf.txt")))
 ;; The reverse: edited on disk (not open), undone in its buffer.
 (h-observe "edit_disk" (agent-edit-replace '(:path "crlf2.txt" :oldText "b" :newText "B")))
 (let ((buf (h-open "crlf2.txt")))
   (h-observe "undo_open" (agent-edit-undo (plist-get (gethash "edit_disk" h-observed) :editId)))
   (h-wait (lambda () (not (buffer-modified-p buf))) 5)
   (h-observe "text_after_undo_open" (h-text buf))
   (h-observe "disk_after_undo_open" (crlf-disk "crlf2.txt"))))
