-- The zone of the booking's link when it was made, kept with the booking as
-- its title and location are: a booker who gave no zone is written to in it
-- (confirmation, reschedule and cancellation alike), also once the link is
-- deleted (the booking then has no link to read it from). Bookings made
-- before this take their link's zone now; those whose link is gone keep null
-- (the emails then use the company's zone).
ALTER TABLE bookings ADD COLUMN link_timezone text;
UPDATE bookings b SET link_timezone = l.timezone FROM booking_links l WHERE l.id = b.booking_link_id;
